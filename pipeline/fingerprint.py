"""Behaviour fingerprints: rows of two versions of a player are never mixed.

The run id and the coverage of a data folder are keyed by names (seed, deal,
variant, policy) and the package version, which does not change when a
player's code does. So every run first computes, for each variant × policy it
is about to write, a *fingerprint*: a hash of everything the player's rows
carry (score, won, moves, decisions, nodes, status and the game line) on a
fixed set of decks, computed through ``engine_rs_free.players.play`` as
every batch is. The same code gives the same fingerprint on any machine; a
change that alters any row on those decks (a rule, a tie-break, a search
order) changes it.

Where fingerprints live:

- ``DATA/fingerprints/variant=<v>/policy=<p>.json``: the record of each pair
  (written whole and atomically): the fingerprint of the code whose rows the
  folder holds, the deck set it was computed on (seed, first deal, count,
  node limit), the per-deck values (so a mismatch can say what changed), the
  engine version, the time and the run that recorded it;
- every data file's footer: ``acesup.fingerprint`` (pipeline.storage).

A run whose fingerprint for a pair differs from the record, while the folder
holds rows of that pair, stops before it writes anything (``FingerprintMismatch``,
a UserError) and names the two ways out: another data folder, or
``acesup retire`` (``retire_pair``), which moves the old rows aside to
``DATA/retired/`` so the next run plays them again with the new code. The
fingerprint is recomputed on the deck set the record names, so changing the
default deck counts below never makes old records disagree.

Rows written before fingerprints existed (footers without one, and no
record) are rechecked instead: up to the pair's deck count of them are played
again with this code and compared column by column; they are kept (and the
record written) only if every value agrees.

The catalog (queries.catalog) refuses to pool rows of one pair whose footers
carry two fingerprints (``footer_conflicts``), so no report mixes them.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from .errors import UserError
from .storage import RESULTS, BatchName, DataStore, decode_name, encode_name, parse_batch_path

FORMAT = 1
RECORDS = "fingerprints"
RETIRED = "retired"
SEED = 0xF1A6E5  # the fingerprint decks: deals 0.. of this seed (no run needs to use it)

# Deck counts: the cost of a pair's fingerprint is a fraction of a second on a warm cache
# (measured on this machine, Dec 2026: plain policies 40k-100k games/s; the solver 20-50,000
# deals/s depending on variant and restriction, with rare deals of 10^8 nodes, hence the node
# limit; pimc:samples=8 ~100 games/s standard, far slower on easy).
POLICY_DECKS = 500
SOLVER_DECKS = 100
SOLVER_NODE_LIMIT = 100_000  # per deck: bounds the worst case at ~10^7 nodes (a few seconds)
PIMC_GAMES = 160  # samples x decks: pimc:samples=8 plays 20 decks
PIMC_EASY_DECKS = 1  # an easy pimc game takes seconds to minutes

COLUMNS = ("score", "won", "moves", "decisions", "nodes", "status", "line")


@dataclass(frozen=True)
class DeckSet:
    """The decks a fingerprint is computed on: deals ``first .. first+count-1`` of ``seed``."""

    seed: int
    first: int
    count: int
    node_limit: int | None = None  # the solver's per-deck node limit while fingerprinting


def deck_set_for(variant: str, policy: str) -> DeckSet:
    """The default deck set of a pair (new records only; existing ones keep theirs)."""
    from engine_rs_free.players import parse_player
    from engine_rs_free.rules import rules_by_name

    spec = parse_player(policy)
    if spec.kind == "solver":
        return DeckSet(SEED, 0, SOLVER_DECKS, SOLVER_NODE_LIMIT)
    if spec.kind == "pimc":
        if rules_by_name(variant).preset == "easy":
            return DeckSet(SEED, 0, PIMC_EASY_DECKS)
        return DeckSet(SEED, 0, max(2, PIMC_GAMES // int(spec.param("samples"))))
    return DeckSet(SEED, 0, POLICY_DECKS)


@dataclass
class Fingerprint:
    """A pair's fingerprint: ``digest`` and the per-deck values it hashes (see the module docstring)."""

    variant: str
    policy: str
    digest: str
    decks: DeckSet
    values: dict[str, list] = field(default_factory=dict)  # COLUMNS, lines as 8-hex digests
    engine_version: str = ""
    computed: str = ""
    run_id: str = ""  # the run that recorded it
    legacy_checked: int = 0  # rows written before fingerprints that were rechecked and kept

    def to_json(self) -> str:
        d = {"format": FORMAT, **asdict(self)}
        return json.dumps(d, indent=1) + "\n"

    @classmethod
    def from_json(cls, text: str) -> "Fingerprint":
        d = json.loads(text)
        if d.pop("format", None) != FORMAT:
            raise ValueError("fingerprint record of another format")
        d["decks"] = DeckSet(**d["decks"])
        return cls(**d)


def _columns(variant: str, policy: str, decks: DeckSet) -> dict[str, list]:
    """The player's rows on ``decks`` (every column, lines included), as plain lists."""
    from engine_rs_free.deals import deal_batch
    from engine_rs_free.players import play

    indices = np.arange(decks.first, decks.first + decks.count, dtype=np.int64)
    cols = play(deal_batch(decks.seed, decks.first, decks.count), variant, policy, seed=decks.seed,
                indices=indices, want_lines=True, node_limit=decks.node_limit).columns()
    n = decks.count
    out = {}
    for name in COLUMNS:
        v = cols.get(name)
        if v is None:
            out[name] = None
        elif name in ("status", "line"):
            out[name] = [None if x is None else str(x) for x in v]
        elif name == "won":
            out[name] = [bool(x) for x in np.asarray(v)]
        else:
            out[name] = [int(x) for x in np.asarray(v)]
        if out[name] is not None and len(out[name]) != n:
            raise RuntimeError(f"player {policy!r} returned {len(out[name])} {name} for {n} decks")
    return out


def _line_digest(line: str | None) -> str | None:
    return None if line is None else hashlib.sha256(line.encode()).hexdigest()[:8]


def compute(variant: str, policy: str, decks: DeckSet | None = None) -> Fingerprint:
    """The fingerprint of ``policy`` under ``variant`` with this code (``decks``: default deck set)."""
    from .spec import engine_version

    decks = decks or deck_set_for(variant, policy)
    cols = _columns(variant, policy, decks)
    text = json.dumps({"format": FORMAT, "variant": variant, "policy": policy, "decks": asdict(decks),
                       "columns": cols}, sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    values = {**cols, "line": None if cols["line"] is None else [_line_digest(x) for x in cols["line"]]}
    return Fingerprint(variant, policy, digest, decks, values, engine_version(),
                       time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))


# -- the records ---------------------------------------------------------------------------


def result_name(rel: str) -> BatchName | None:
    """What a result file's path says (a batch file, or a compacted one of pipeline.compact), else None."""
    name = parse_batch_path(rel)
    if name is not None:
        return name
    from .compact import COMPACTED_RE

    folder, _, base = rel.rpartition("/")
    m = COMPACTED_RE.match(base)
    if m is None:
        return None
    head = parse_batch_path(f"{folder}/{m['run']}-{m['first']}-{m['last']}.parquet")
    return head


def record_path(variant: str, policy: str) -> str:
    """``fingerprints/variant=<v>/policy=<p>.json``, relative to the data location."""
    return f"{RECORDS}/variant={encode_name(variant)}/policy={encode_name(policy)}.json"


def pair_folder(variant: str, policy: str) -> str:
    """The results folder of a pair, relative to the data location."""
    return f"{RESULTS}/variant={encode_name(variant)}/policy={encode_name(policy)}"


def read_record(store: DataStore, variant: str, policy: str) -> Fingerprint | None:
    """The pair's record, or None if it has none (or one of another format, which is rechecked)."""
    rel = record_path(variant, policy)
    if not store.exists(rel):
        return None
    try:
        return Fingerprint.from_json(store.read_bytes(rel).decode())
    except (ValueError, KeyError, TypeError):
        return None


def write_record(store: DataStore, fp: Fingerprint) -> None:
    store.write_atomic(record_path(fp.variant, fp.policy), fp.to_json().encode())


def read_all_records(store: DataStore) -> dict[tuple[str, str], Fingerprint]:
    """Every record in the folder, by (variant, policy)."""
    out = {}
    for rel in store.list_files(RECORDS):
        parts = rel.split("/")
        if len(parts) != 3 or not rel.endswith(".json"):
            continue
        try:
            variant = decode_name(parts[1].removeprefix("variant="))
            policy = decode_name(parts[2].removeprefix("policy=").removesuffix(".json"))
        except UnicodeDecodeError:
            continue
        rec = read_record(store, variant, policy)
        if rec is not None:
            out[(variant, policy)] = rec
    return out


# -- what changed ---------------------------------------------------------------------------


def _show(v) -> str:
    return "none" if v is None else str(v)


def differences(old: dict[str, list | None], new: dict[str, list | None], deals: list[int]) -> list[str]:
    """Per column, how many decks differ and the first example: ``score on 7 of 100 decks (deal 3: 40 -> 44)``."""
    out = []
    for name in COLUMNS:
        a, b = old.get(name), new.get(name)
        if a is None and b is None:
            continue
        if a is None or b is None:
            out.append(f"{name} {'now present' if a is None else 'now absent'}")
            continue
        diff = [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
        if diff:
            i = diff[0]
            example = "" if name == "line" else f" (deal {deals[i]}: {_show(a[i])} -> {_show(b[i])})"
            out.append(f"{name} on {len(diff)} of {len(a)} decks{example}")
    return out


class FingerprintMismatch(UserError):
    """The code plays a pair differently from the rows the data folder holds (see the module docstring)."""


def ways_out(store: DataStore, variant: str, policy: str) -> str:
    data = store.location
    return (f"Nothing was written. Either use a new data folder (--data NEW_FOLDER), or retire the old rows: "
            f"acesup retire --variant {variant} --policy {policy} --data {data} (they move to {data}/{RETIRED}/ "
            f"and the next run plays those deals again)")


def mismatch_error(store: DataStore, rec: Fingerprint, new: Fingerprint, rows: int) -> FingerprintMismatch:
    ds = rec.decks
    deals = list(range(ds.first, ds.first + ds.count))
    changed = ", ".join(differences(rec.values, new.values, deals)) or "the same per-deck values, another hash"
    return FingerprintMismatch(
        f"{rec.variant} x {rec.policy}: this code plays it differently from the {rows:,} rows in {store.location} "
        f"(fingerprint {new.digest}; the rows have {rec.digest}, recorded by run {rec.run_id or '?'} on "
        f"{rec.computed} with {rec.engine_version}). On the {ds.count} fingerprint decks (deals "
        f"{ds.first}..{ds.first + ds.count - 1} of seed {ds.seed}) it differs in {changed}. "
        f"{ways_out(store, rec.variant, rec.policy)}")


# -- rows written before fingerprints -------------------------------------------------------


@dataclass
class Recheck:
    """Rows of a file played again with this code: how many and what differs."""

    path: str
    rows: int
    problems: list[str]


def recheck_file(data: str, rel: str, rows: int, node_limit: int | None) -> Recheck:
    """Play the first ``rows`` rows of a result file again and compare every column it stores.

    A stored line is compared where the file has one (runs without lines keep only
    those of won solver rows).
    """
    from engine_rs_free.deals import deal_batch
    from engine_rs_free.players import play

    from .storage import read_table

    store = DataStore(data)
    t = read_table(store, rel).sort_by("deal").slice(0, rows)
    deal = t.column("deal").to_numpy()
    seed = int(t.column("seed")[0].as_py())
    variant, policy = t.column("variant")[0].as_py(), t.column("policy")[0].as_py()
    decks = np.concatenate([deal_batch(seed, int(d), 1) for d in deal]) if len(deal) else np.zeros((0, 52), np.uint8)
    got = play(decks, variant, policy, seed=seed, indices=deal, want_lines=True, node_limit=node_limit).columns()
    deals = [int(d) for d in deal]
    stored: dict[str, list | None] = {}
    fresh: dict[str, list | None] = {}
    for name in COLUMNS:
        col = t.column(name).to_pylist()
        new = got.get(name)
        new = None if new is None else [x.item() if hasattr(x, "item") else x for x in
                                         (new if isinstance(new, list) else np.asarray(new).tolist())]
        if name == "line":
            new = [n if s is not None else None for s, n in zip(col, new or [None] * len(col))]
        if name in ("nodes", "status") and all(x is None for x in col):
            col = None
        stored[name], fresh[name] = col, new
    return Recheck(rel, len(deals), differences(stored, fresh, deals))


def legacy_error(store: DataStore, variant: str, policy: str, check: Recheck, rows: int) -> FingerprintMismatch:
    return FingerprintMismatch(
        f"{variant} x {policy}: the {rows:,} rows in {store.location} were written before acesup recorded "
        f"behaviour fingerprints, and this code plays them differently: {check.rows} rows of {check.path} "
        f"played again differ in {', '.join(check.problems)}. {ways_out(store, variant, policy)}")


# -- the run's check ------------------------------------------------------------------------


def _pair_files(store: DataStore, variant: str, policy: str) -> dict[str, int]:
    """The pair's result files (relative path -> rows, from the name)."""
    out = {}
    for rel in store.list_files(pair_folder(variant, policy)):
        name = result_name(rel)
        if name is not None and name.variant == variant and name.policy == policy:
            out[rel] = name.last - name.first + 1
    return out


def check_run(store: DataStore, pairs, *, run_id: str, compute_many, recheck_many) -> dict[tuple[str, str], str]:
    """Fingerprint every pair a run will write and hold it to the folder; return pair -> fingerprint.

    ``compute_many([(variant, policy, DeckSet | None), …])`` returns the Fingerprints
    (in order; on Ray workers or here); ``recheck_many([(rel, rows, node_limit), …])``
    returns Rechecks. For each pair:

    - the record agrees, or the folder holds no rows of the pair: the record is
      (re)written and the run goes on;
    - the record disagrees while rows exist: FingerprintMismatch, nothing written;
    - no record, but rows: if their footers carry fingerprints, those must all be
      this code's; rows without one (written before fingerprints) are rechecked.

    Every pair is checked before any error is raised, so one message lists them all.
    """
    from .manifest import read_all_manifests

    pairs = list(dict.fromkeys(pairs))
    records = {pair: read_record(store, *pair) for pair in pairs}
    fps = compute_many([(v, p, records[(v, p)].decks if records[(v, p)] else None) for v, p in pairs])
    errors: list[str] = []
    to_write: list[Fingerprint] = []
    legacy: list[tuple[Fingerprint, str, int, int | None]] = []
    manifests = None
    for fp in fps:
        pair = (fp.variant, fp.policy)
        rec = records[pair]
        fp.run_id = run_id
        if rec is not None and rec.digest == fp.digest:
            continue
        files = _pair_files(store, *pair)
        rows = sum(files.values())
        if not files:
            to_write.append(fp)
            continue
        if rec is not None:
            errors.append(str(mismatch_error(store, rec, fp, rows)))
            continue
        footers = {rel: file_fingerprint(store, rel) for rel in sorted(files)}
        others = sorted({f for f in footers.values() if f and f != fp.digest})
        if others:
            errors.append(
                f"{fp.variant} x {fp.policy}: this code plays it differently from the {rows:,} rows in "
                f"{store.location} (fingerprint {fp.digest}; their footers carry {', '.join(others)}, and the "
                f"record {record_path(*pair)} is missing). {ways_out(store, *pair)}")
            continue
        old = [rel for rel, f in footers.items() if f is None]
        if not old:
            to_write.append(fp)
            continue
        if manifests is None:
            manifests = read_all_manifests(store)
        m = manifests.get(result_name(old[0]).run_id)
        node_limit = (m.spec.get("node_limit") or None) if m is not None else None
        legacy.append((fp, old[0], rows, node_limit))
    if legacy:
        checks = recheck_many([(rel, fp.decks.count, nl) for fp, rel, _, nl in legacy])
        for (fp, rel, rows, _), check in zip(legacy, checks):
            if check.problems:
                errors.append(str(legacy_error(store, fp.variant, fp.policy, check, rows)))
            else:
                fp.legacy_checked = check.rows
                to_write.append(fp)
    if errors:
        head = f"{len(errors)} players play differently from their rows in the data folder:\n" if len(errors) > 1 else ""
        raise FingerprintMismatch(head + "\n".join(errors))
    for fp in to_write:
        write_record(store, fp)
    return {(fp.variant, fp.policy): fp.digest for fp in fps}


def compute_here(requests) -> list[Fingerprint]:
    """``compute_many`` in this process."""
    return [compute(v, p, d) for v, p, d in requests]


def check_here(store: DataStore, pairs, *, run_id: str) -> dict[tuple[str, str], str]:
    """``check_run`` with every fingerprint and recheck computed in this process (no Ray)."""
    return check_run(store, pairs, run_id=run_id, compute_many=compute_here,
                     recheck_many=lambda reqs: [recheck_file(store.location, *r) for r in reqs])


# -- the catalog's check --------------------------------------------------------------------


def footer_conflicts(footers: dict[str, str | None], *, data: str = "DATA") -> list[str]:
    """Pairs whose files carry two or more fingerprints, one message each.

    ``footers``: result file path (relative, ``results/…``) -> its footer fingerprint
    (None for a file written before fingerprints, which the run-time recheck vouches for).
    """
    by_pair: dict[tuple[str, str], dict[str, list[str]]] = {}
    for rel, fp in footers.items():
        name = result_name(rel)
        if name is None or not fp:
            continue
        by_pair.setdefault((name.variant, name.policy), {}).setdefault(fp, []).append(rel)
    out = []
    for (variant, policy), groups in sorted(by_pair.items()):
        if len(groups) < 2:
            continue
        parts = ", ".join(f"{fp} in {len(files)} file(s) (e.g. {sorted(files)[0]})" for fp, files in sorted(groups.items()))
        out.append(f"{variant} x {policy} holds rows of {len(groups)} behaviours: {parts}; the report never "
                   f"pools them: retire the old rows with 'acesup retire --variant {variant} --policy {policy} "
                   f"--data {data}'")
    return out


def check_unmixed(store: DataStore, rels) -> None:
    """FingerprintMismatch if the files ``rels`` of some variant × policy carry two fingerprints.

    Reads each file's footer (a ranged read on an object store). The aggregates call it
    for the pairs they are about to add rows of, so no table pools two behaviours.
    """
    conflicts = footer_conflicts({rel: file_fingerprint(store, rel) for rel in rels}, data=store.location)
    if conflicts:
        raise FingerprintMismatch(f"data folder {store.location!r}: " + "\n".join(conflicts))


# -- retiring old rows ----------------------------------------------------------------------


@dataclass
class Retired:
    """What ``retire_pair`` did."""

    variant: str
    policy: str
    fingerprint: str
    files: list[str]
    rows: int
    kept: int
    folder: str


def file_fingerprint(store: DataStore, rel: str) -> str | None:
    from .storage import META_FINGERPRINT, footer

    kv = footer(store, rel).metadata or {}
    v = kv.get(META_FINGERPRINT.encode())
    return v.decode() if v else None


def retire_pair(store: DataStore, variant: str, policy: str, *, current: Fingerprint | None = None) -> Retired:
    """Move the rows of a pair that this code would not write to ``DATA/retired/<time>/``.

    Kept: files whose footer carries this code's fingerprint, and files written
    before fingerprints if the record vouches for them (rechecked, same fingerprint).
    Then the record is this code's, and planning (which sees the files gone)
    plans those deals again. Call it with the folder's DataLock held.
    """
    from .plan import reconcile
    from .manifest import read_all_manifests

    rec = read_record(store, variant, policy)
    if current is None:
        current = compute(variant, policy, rec.decks if rec else None)
    legacy_ok = rec is not None and rec.digest == current.digest and rec.legacy_checked > 0
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    folder = f"{RETIRED}/{stamp}"
    moved, rows, kept = [], 0, 0
    for rel in sorted(store.list_files(pair_folder(variant, policy))):
        name = result_name(rel)
        if name is None:
            continue
        fp = file_fingerprint(store, rel)
        if fp == current.digest or (fp is None and legacy_ok):
            kept += 1
            continue
        store.move(rel, f"{folder}/{rel}")
        moved.append(rel)
        rows += name.last - name.first + 1
    if rec is not None and rec.digest == current.digest:
        current = rec
    write_record(store, replace(current, legacy_checked=current.legacy_checked if legacy_ok else 0))
    reconcile(store, read_all_manifests(store))
    return Retired(variant, policy, current.digest, moved, rows, kept, store.uri(folder))


__all__ = ["DeckSet", "Fingerprint", "FingerprintMismatch", "compute", "deck_set_for", "differences",
           "footer_conflicts", "read_record", "write_record", "read_all_records", "record_path",
           "recheck_file", "retire_pair"]
