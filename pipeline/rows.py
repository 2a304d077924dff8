"""Reading the rows of some deal ranges from data files, without reading the rest.

Every data file holds one variant × policy of one run, sorted by deal, with
Parquet statistics on ``deal`` per row group (pipeline.storage writes them,
pipeline.compact keeps them). So the rows of a deal range are read from the
row groups whose ``deal`` statistics overlap it, and a night that adds deals
``a..b`` reads only what lies in ``a..b``, however many rows the folder holds.

Ranges are inclusive ``(first, last)`` pairs, sorted and disjoint (as
pipeline.manifest.merge_ranges makes them).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .storage import DataStore


def intersect_ranges(a: Sequence[Sequence[int]], b: Sequence[Sequence[int]]) -> list[tuple[int, int]]:
    """The intersection of two sorted lists of disjoint inclusive ranges.

    >>> intersect_ranges([(0, 9), (20, 29)], [(5, 24)])
    [(5, 9), (20, 24)]
    """
    out = []
    i = j = 0
    while i < len(a) and j < len(b):
        lo = max(a[i][0], b[j][0])
        hi = min(a[i][1], b[j][1])
        if lo <= hi:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def ranges_size(ranges: Sequence[Sequence[int]]) -> int:
    """How many deals the ranges hold."""
    return sum(b - a + 1 for a, b in ranges)


def _in_ranges(deal: np.ndarray, ranges: Sequence[Sequence[int]]) -> np.ndarray:
    """Boolean mask of the deals inside the sorted disjoint ranges (vectorized)."""
    if not ranges:
        return np.zeros(len(deal), dtype=bool)
    firsts = np.fromiter((a for a, _ in ranges), dtype=np.int64, count=len(ranges))
    lasts = np.fromiter((b for _, b in ranges), dtype=np.int64, count=len(ranges))
    k = np.searchsorted(firsts, deal, side="right") - 1
    ok = k >= 0
    kk = np.where(ok, k, 0)
    return ok & (deal <= lasts[kk])


def read_ranges(store: DataStore, rel: str, ranges: Sequence[Sequence[int]], columns: list[str]) -> pa.Table:
    """The rows of file ``rel`` whose deal lies in ``ranges`` (only ``columns``, plus ``deal``).

    Row groups whose ``deal`` statistics miss every range are not read.
    """
    cols = list(dict.fromkeys(["deal", *columns]))
    with store.fs.open_input_file(store.path(rel)) as f:
        pf = pq.ParquetFile(f)
        md = pf.metadata
        deal_col = pf.schema_arrow.get_field_index("deal")
        groups = []
        for g in range(md.num_row_groups):
            st = md.row_group(g).column(deal_col).statistics
            if st is None or not st.has_min_max:
                groups.append(g)
            elif intersect_ranges([(int(st.min), int(st.max))], ranges):
                groups.append(g)
        if not groups:
            return pa.table({c: pa.array([], type=pf.schema_arrow.field(c).type) for c in cols})
        t = pf.read_row_groups(groups, columns=cols)
    mask = _in_ranges(t.column("deal").to_numpy(), ranges)
    return t if mask.all() else t.filter(pa.array(mask))


__all__ = ["intersect_ranges", "ranges_size", "read_ranges"]
