"""acesup deal: print seeded decks."""

from __future__ import annotations

NAME = "deal"
HELP = "print seeded decks in the deck format (one deck a line)"
DESCRIPTION = """\
Print deck number INDEX of seed SEED (and the COUNT-1 after it), one deck a
line, 52 card codes in deal order. The output is a deck file that every other
command reads back.

example:
  acesup deal --seed 2026 --index 0 --count 3 > decks.txt
"""


def add_arguments(p):
    p.add_argument("--seed", type=int, required=True, help="deal seed, 0..2**64-1")
    p.add_argument("--index", type=int, default=0, help="first deal index, 0..2**63-1 (default 0)")
    p.add_argument("--count", type=int, default=1, help="how many decks (default 1)")


def run(args) -> int:
    import sys

    from engine_rs_free.cards import format_deck
    from engine_rs_free.deals import deal_batch
    from pipeline.errors import UserError

    if args.count < 1:
        raise UserError(f"--count {args.count} is not positive; give 1 or more")
    chunk = 100_000
    done = 0
    while done < args.count:
        n = min(chunk, args.count - done)
        decks = deal_batch(args.seed, args.index + done, n)
        sys.stdout.write("".join(format_deck(d) + "\n" for d in decks))
        done += n
    return 0
