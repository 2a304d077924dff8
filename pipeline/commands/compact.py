"""acesup compact: merge the small data files of a data folder into few large ones."""

from __future__ import annotations

NAME = "compact"
HELP = "merge small data files (a night's batches) into few large ones; the nightly flow does it"
DESCRIPTION = """\
Merge the data files of each run x variant x policy, in deal order, into files
of up to about 128 MB (pipeline/compact.py): a night's batch files into one
file, and eight small merged files into one of the next size. Each merge reads
and checks its inputs, writes the merged file, records it in the run's
manifest, then deletes the inputs: a killed compaction is finished by the next
one (or the next run), and no key is ever lost or counted twice. The nightly
flow compacts after every night; run this after 'acesup run' if you do not use
it. Takes the data folder's lock.

example:
  acesup compact
  acesup compact --data /mnt/shared/acesup-data --max-mb 1024
"""


def add_arguments(p):
    from pipeline.spec import DEFAULT_DATA

    p.add_argument("--data", metavar="PATH", default=DEFAULT_DATA, help=f"data folder or URI (default {DEFAULT_DATA})")
    p.add_argument("--max-mb", type=int, metavar="N",
                   help="rewrite at most N MB of merged files now (default: 4 x the batch files, at least 256)")


def run(args) -> int:
    from pipeline.compact import compact
    from pipeline.errors import UserError
    from pipeline.plan import DataLock
    from pipeline.storage import DataStore

    if args.max_mb is not None and args.max_mb < 1:
        raise UserError(f"--max-mb {args.max_mb} is not positive; give 1 or more")
    store = DataStore(args.data)
    with DataLock(store):
        res = compact(store, max_bytes=None if args.max_mb is None else args.max_mb << 20)
    for p in res.problems:
        print(f"problem: {p}")
    print(f"compacted {res.files_in} files into {res.files_out} ({res.rows:,} rows, {res.bytes_in / 1e6:,.1f} MB "
          f"read, {res.bytes_out / 1e6:,.1f} MB written) in {res.seconds:.1f} s"
          + (f"; {res.deferred} merges left for a later call" if res.deferred else ""))
    return 1 if res.problems else 0
