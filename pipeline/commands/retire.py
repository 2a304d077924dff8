"""acesup retire: move aside the rows of a player that this code no longer plays the same way."""

from __future__ import annotations

NAME = "retire"
HELP = "move aside the old rows of a variant x policy whose behaviour changed (see its fingerprint)"
DESCRIPTION = """\
After a change to a player (a rule, a tie-break, a search), its rows in the
data folder are of the old behaviour, and 'acesup run' refuses to add new
rows beside them. 'acesup retire' computes the player's behaviour fingerprint
with this code (a few hundred fixed decks, or the deck set the folder's
record names), moves every file of that variant x policy whose footer carries
another fingerprint to DATA/retired/<UTC time>/ (nothing is deleted), records
the new fingerprint, and marks the moved batches lost in their manifests, so
the next run or night plays those deals again with this code. Files of this
code's fingerprint stay. Takes the data folder's lock, like a run.

examples:
  acesup retire --variant standard --policy solver:must_fill
  acesup retire --variant strict --policy human --data /mnt/shared/acesup-data
"""


def add_arguments(p):
    from pipeline.spec import DEFAULT_DATA

    p.add_argument("--variant", required=True, help="the variant, e.g. standard or strict+optional")
    p.add_argument("--policy", required=True, help="the player, e.g. greedy, solver:must_fill, pimc:samples=8")
    p.add_argument("--data", metavar="PATH", default=DEFAULT_DATA, help=f"data folder or URI (default {DEFAULT_DATA})")


def run(args) -> int:
    from pipeline.fingerprint import retire_pair
    from pipeline.lock import DataLock
    from pipeline.spec import canonical_policy, canonical_variant
    from pipeline.storage import DataStore

    variant = canonical_variant(args.variant, "--variant")
    policy = canonical_policy(args.policy, "--policy")
    store = DataStore(args.data)
    store.check_writable()
    with DataLock(store):
        r = retire_pair(store, variant, policy)
    if r.files:
        print(f"retired {len(r.files)} files ({r.rows:,} rows) of {variant} x {policy} to {r.folder}/; "
              f"{r.kept} files of this code's fingerprint {r.fingerprint} stay. The next 'acesup run' "
              f"(or night) plays those deals again.")
    else:
        print(f"nothing to retire: every file of {variant} x {policy} ({r.kept}) carries this code's "
              f"fingerprint {r.fingerprint}")
    return 0
