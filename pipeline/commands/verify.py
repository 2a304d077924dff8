"""acesup verify: check a run's rows are present exactly once and files match the manifest."""

from __future__ import annotations

NAME = "verify"
HELP = "check every deal x variant x policy of a run is present exactly once and files match the manifest"
DESCRIPTION = """\
Check that run RUN's request is covered exactly once (from the manifests of
all runs in the data folder): no deal missing, none in two files, every file
present with its recorded size, no file that no manifest records. Files not
verified yet (a night's new batch files) are read in full: SHA-256, footer and
key columns as recorded, sane values; with --deep every file is (the check of
the whole folder; files compacted from checked files are otherwise trusted).
Exit 0 if all is well, 1 with the list of problems otherwise.

example:
  acesup verify 24f0aae64a47
  acesup verify 24f0aae64a47 --deep --data /mnt/shared/acesup-data
"""


def add_arguments(p):
    p.add_argument("run_id", metavar="RUN", help="run id (see 'acesup runs')")
    p.add_argument("--data", metavar="PATH", default="./acesup-data", help="data folder or URI (default ./acesup-data)")
    p.add_argument("--no-checksums", action="store_true", help="skip the SHA-256 of each file (faster)")
    p.add_argument("--deep", action="store_true", help="read every file in full, not only the new ones")


def run(args) -> int:
    from pipeline.errors import UserError
    from pipeline.manifest import read_all_manifests
    from pipeline.storage import DataStore
    from pipeline.verify import verify_run

    store = DataStore(args.data)
    runs = read_all_manifests(store)
    if args.run_id not in runs:
        raise UserError(f"no run {args.run_id!r} in {store.location} (runs: {', '.join(sorted(runs)) or 'none'}); "
                        f"list them with 'acesup runs --data {args.data}'")
    res = verify_run(store, args.run_id, checksums=not args.no_checksums, deep=args.deep)
    for p in res.problems:
        print(f"problem: {p}")
    verdict = "ok" if res.ok else f"FAILED ({len(res.problems)} problems)"
    files = f"{res.files_checked} files read in full, {res.files_trusted} verified before"
    print(f"run {res.run_id}: {verdict}: {res.rows_found:,} of {res.rows_expected:,} rows ({files}), "
          f"each key exactly once" if res.ok else
          f"run {res.run_id}: {verdict}: {res.rows_found:,} of {res.rows_expected:,} rows ({files})")
    return 0 if res.ok else 1
