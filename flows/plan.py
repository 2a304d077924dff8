"""What tonight's run covers: the standing run extended by the next block of deals.

A plain function over run specs (no Prefect, no Ray, no I/O), so the rule is
tested directly and the flows only wire it in.

The *standing run* is the run of the user's spec (its run id does not depend
on the deal count or the caps, so every night's spec has the same id). The
pipeline keeps the key (seed, deal, variant, policy) unique across the data
folder and plans only what is missing, so "extend by N deals" is just the same
spec with more deals. The rule:

- No standing run yet: tonight runs the spec as it is (the first night of
  ``acesup nightly --now`` with no arguments is the embedded default of
  ``acesup run``).
- The standing run is unfinished (a night failed or was stopped): tonight
  finishes exactly what it already asked for and adds nothing, so a failing
  cluster never lets the requested range run ahead of the data, and a retry of
  a failed night is idempotent.
- Otherwise tonight asks for ``deals_per_night`` more deals (default: the
  spec's own deal count, so every night costs about what the first one did),
  or for the spec's deal count if that is more (an edited spec takes effect).

Caps of the expensive players (the solver on ``easy``, ``pimc``) scale with the
run: a pair capped to a fraction f of the spec's deals covers f of tonight's
total, so every night's block keeps the spec's proportions and costs the same.
A pair never covers fewer deals than it already asked for (coverage only grows).
"""

from __future__ import annotations

from collections.abc import Mapping

from pipeline.errors import UserError
from pipeline.spec import MAX_INDEX, RunSpec, with_overrides


def pair_counts(spec: RunSpec) -> dict[str, int]:
    """``variant/policy`` -> deals the spec asks for (0 for a pair capped to nothing)."""
    return {f"{v}/{p}": spec.deals_for(v, p) for v, p in spec.pairs()}


def spec_with_counts(base: RunSpec, deals: int, counts: Mapping[str, int]) -> RunSpec:
    """``base`` with ``deals`` deals and each pair capped to ``counts[pair]`` (if below ``deals``).

    Per-pair caps (``variant/policy`` keys) replace the spec's caps; pairs not in
    ``counts`` cover all ``deals``.
    """
    caps = {key: n for key, n in sorted(counts.items()) if n < deals}
    return with_overrides(base, deals=deals, caps=caps)


def requested_counts(start: int, requested: Mapping[str, tuple[int, int] | list[int]]) -> dict[str, int]:
    """Deals per pair from a manifest's ``requested`` ranges (prefixes from ``start``)."""
    return {key: int(last) - start + 1 for key, (first, last) in requested.items()}


def next_night_spec(
    base: RunSpec,
    requested: Mapping[str, tuple[int, int] | list[int]] | None,
    complete: bool,
    deals_per_night: int | None = None,
) -> RunSpec:
    """Tonight's spec (see the module docstring for the rule).

    base:            the user's spec (it defines the run id and the caps' proportions)
    requested:       the standing run's requested ranges, ``variant/policy`` -> (first, last),
                     as its manifest records them; None or empty if there is no standing run
    complete:        every requested row is present in the data folder
    deals_per_night: deals to add on a night that extends (default ``base.deals``)
    """
    if deals_per_night is not None and deals_per_night < 1:
        raise UserError(f"deals per night {deals_per_night} is not positive; give 1 or more "
                        f"(--deals-per-night N)")
    if not requested:
        return base
    before = requested_counts(base.start, requested)
    # Pairs of the base spec that the standing run did not have (none: same run id) count 0.
    before = {key: before.get(key, 0) for key in pair_counts(base)}
    covered_deals = max(before.values(), default=0)
    if not complete:
        return spec_with_counts(base, max(covered_deals, 1), before)
    step = base.deals if deals_per_night is None else deals_per_night
    # The spec's own deal count is a floor: raising it in the file takes effect the next night.
    target = max(covered_deals + step, base.deals)
    if base.start + target - 1 > MAX_INDEX:
        raise UserError(f"extending run {base.run_id} to {target} deals from index {base.start} "
                        f"passes the last deal index {MAX_INDEX}; start a new run (another seed)")
    counts = {}
    for key, n in pair_counts(base).items():
        # Integer arithmetic: the same counts on every machine, night after night.
        scaled = n * target // base.deals
        counts[key] = max(before[key], min(scaled, target))
    return spec_with_counts(base, target, counts)


__all__ = ["next_night_spec", "pair_counts", "requested_counts", "spec_with_counts"]
