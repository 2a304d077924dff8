"""Verifying a run: every key it asks for is present exactly once, and files match manifests.

``verify_run(data, run_id)`` reads the run's manifest (its request) and the
manifests of every run in the folder (keys are unique across the folder, so
another run's files may cover this run's keys). For every variant × policy of
the request it checks, from the records and one listing of the folder (cheap
whatever the history):

- the live files covering the requested range do not overlap and leave no gap;
- each of them exists with the size its record gives;
- no file in the pair's folder is left out of every manifest (it could double keys);
- the report's aggregates count only keys that live files hold, each once;

and it reads in full the files not verified yet (a night's new batch files: a
file compaction writes from checked inputs is recorded as verified), or with
``deep=True`` every file, checking that each has the SHA-256 its record gives, a
footer of its run (run id, schema version, row count), key columns that hold
exactly its deals, seed, variant and policy, and sane values: score 0..48, won ==
(score == 48), solver rows carry nodes and status and a line when won, other rows
no nodes or status.

Reading files in full is what catches what planning trusts (sizes and names);
``acesup verify RUN --deep`` does it for the whole folder.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow.compute as pc

from engine_rs_free.players import parse_player

from .manifest import pair_key, read_all_manifests, subtract_ranges
from .rows import intersect_ranges, ranges_size
from .storage import RESULTS, DataStore, encode_name, file_sha256, footer, footer_problem, read_table

MAX_PROBLEMS = 200


@dataclass
class VerifyResult:
    """Outcome of ``verify_run``: ``ok`` when ``problems`` is empty."""

    run_id: str
    data: str
    rows_expected: int = 0
    rows_found: int = 0
    files_checked: int = 0  # read in full
    files_trusted: int = 0  # verified before (compacted from checked files): size and record only
    problems: list[str] = field(default_factory=list)
    rows_by_pair: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problems

    def add(self, problem: str) -> None:
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(problem)
        elif len(self.problems) == MAX_PROBLEMS:
            self.problems.append("… more problems left out")


def _check_values(t, policy: str, path: str, res: VerifyResult) -> None:
    score = t.column("score").to_numpy()
    won = t.column("won").to_numpy(zero_copy_only=False)
    if score.min(initial=0) < 0 or score.max(initial=0) > 48:
        res.add(f"{path}: score outside 0..48")
    if not np.array_equal(won, score == 48):
        res.add(f"{path}: won disagrees with score == 48")
    solver = parse_player(policy).clairvoyant  # the solver's rows carry nodes and status
    nodes_null = t.column("nodes").null_count
    status = t.column("status")
    if solver:
        if nodes_null or status.null_count:
            res.add(f"{path}: solver rows without nodes or status")
        elif not set(status.unique().to_pylist()) <= {"solved", "gave_up"}:
            res.add(f"{path}: status other than solved/gave_up")
        lines_of_won = pc.filter(t.column("line"), t.column("won"))
        if lines_of_won.null_count:
            res.add(f"{path}: {lines_of_won.null_count} won solver rows without a line")
    elif nodes_null != t.num_rows or status.null_count != t.num_rows:
        res.add(f"{path}: non-solver rows with nodes or status")


def _check_aggregates(store: DataStore, manifests, res: VerifyResult) -> None:
    """The report's aggregates (queries.aggregates) count each included key once, and only keys
    that live files hold: cheap checks on their small tables."""
    from queries.aggregates import covered_by_side, live_files, read_state

    try:
        state = read_state(store)
    except (ValueError, OSError, KeyError) as exc:
        res.add(f"aggregates: unreadable ({exc}); rebuild them with 'acesup report --rebuild'")
        return
    included = state.included()
    covered = covered_by_side(live_files(manifests))
    counted: dict[tuple[str, str], int] = {}
    for r in state.tables["tallies"].to_pylist():
        counted[(r["variant"], r["policy"])] = counted.get((r["variant"], r["policy"]), 0) + r["deals"]
    keys: dict[tuple[str, str], int] = {}
    for (seed, v, p), ranges in included.items():
        keys[(v, p)] = keys.get((v, p), 0) + ranges_size(ranges)
        outside = [g for a, b in ranges for g in subtract_ranges(a, b, covered.get((seed, v, p), []))]
        if outside:
            res.add(f"aggregates: {v}/{p} of seed {seed} count deals {outside[0][0]}..{outside[0][1]} that no "
                    f"live file holds; rebuild them with 'acesup report --rebuild'")
    for side in sorted(set(counted) | set(keys)):
        if counted.get(side, 0) != keys.get(side, 0):
            res.add(f"aggregates: {side[0]}/{side[1]} counts {counted.get(side, 0):,} rows for "
                    f"{keys.get(side, 0):,} keys; rebuild them with 'acesup report --rebuild'")


def verify_run(data: str | DataStore, run_id: str, *, checksums: bool = True, deep: bool = False) -> VerifyResult:
    """Check the run's request is covered exactly once by valid files (see the module docstring).

    deep:      read every file in full (default: only those not verified yet)
    checksums: compare the SHA-256 of the files read with their records
    """
    store = data if isinstance(data, DataStore) else DataStore(data)
    res = VerifyResult(run_id, store.location)
    manifests = read_all_manifests(store)
    m = manifests.get(run_id)
    if m is None:
        known = ", ".join(sorted(manifests)) or "none"
        res.add(f"no run {run_id!r} in {store.location} (runs: {known}); list them with 'acesup runs'")
        return res
    files = store.list_files(RESULTS)
    recorded = {b.path for mm in manifests.values() for b in mm.done()}
    # Inputs of a compaction killed before it deleted them: their keys are in the merged file,
    # and the next planning or compaction deletes them (pipeline.compact), so they are no strays.
    recorded |= {p for mm in manifests.values() for b in mm.done() for p in b.replaces}
    for key, (first, last) in sorted(m.requested.items()):
        variant, _, policy = key.partition("/")
        res.rows_expected += last - first + 1
        batches = sorted(
            (b for mm in manifests.values() if mm.seed == m.seed for b in mm.done()
             if b.key == key and b.first <= last and b.last >= first),
            key=lambda b: b.first,
        )
        at = first
        for b in batches:
            if b.first > at:
                res.add(f"{key}: deals {at}..{b.first - 1} missing")
            elif b.first < at:
                res.add(f"{key}: deals {b.first}..{min(b.last, at - 1)} in more than one file ({b.path})")
            at = max(at, b.last + 1)
        if at <= last:
            res.add(f"{key}: deals {at}..{last} missing")
        found = 0
        for b in batches:
            if b.path not in files:
                res.add(f"{b.path}: file missing (the manifest says done)")
                continue
            if files[b.path] != b.bytes:
                res.add(f"{b.path}: {files[b.path]} bytes, the manifest says {b.bytes}")
                continue
            if b.verified and not deep:
                res.files_trusted += 1
                found += ranges_size(intersect_ranges([(b.first, b.last)], [(first, last)]))
                continue
            res.files_checked += 1
            if checksums:
                digest, _ = file_sha256(store, b.path)
                if digest != b.sha256:
                    res.add(f"{b.path}: SHA-256 {digest[:12]}… differs from the manifest's {b.sha256[:12]}…")
                    continue
            try:
                problem = footer_problem(footer(store, b.path), run_id=b.path.rpartition("/")[2][:12],
                                         rows=b.last - b.first + 1)
                if problem:
                    res.add(f"{b.path}: {problem}")
                    continue
                t = read_table(store, b.path)
            except (OSError, ValueError) as exc:
                res.add(f"{b.path}: unreadable ({exc})")
                continue
            deal = t.column("deal").to_numpy()
            if not np.array_equal(np.sort(deal), np.arange(b.first, b.last + 1)):
                res.add(f"{b.path}: deal column is not exactly {b.first}..{b.last}")
            for name, want in (("seed", m.seed), ("variant", variant), ("policy", policy)):
                got = t.column(name).unique().to_pylist()
                if got != [want]:
                    res.add(f"{b.path}: {name} column holds {got!r}, expected {want!r}")
            _check_values(t, policy, b.path, res)
            found += int(((deal >= first) & (deal <= last)).sum())
        res.rows_by_pair[key] = found
        res.rows_found += found
        folder = f"{RESULTS}/variant={encode_name(variant)}/policy={encode_name(policy)}/"
        strays = [p for p in files if p.startswith(folder) and p.endswith(".parquet") and p not in recorded]
        for p in strays:
            res.add(f"{p}: in no manifest (it may double keys; re-run the spec to adopt or quarantine it)")
    _check_aggregates(store, manifests, res)
    if res.rows_found != res.rows_expected and not res.problems:
        res.add(f"found {res.rows_found} rows, expected {res.rows_expected}")
    return res
