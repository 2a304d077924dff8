"""acesup show: a deck and a game line, state by state."""

from __future__ import annotations

NAME = "show"
HELP = "show the piles after each action of a game line"
DESCRIPTION = """\
Start a game from a deck (given as text, or as seed and index) and print the
piles after each action of a game line: one pile a line, bottom card first,
top card last. Actions: 'd' deals, '2>0' moves the top of pile 2 into empty
pile 0, '2:1>0' (easy) moves the card below the top, 'x2' (discards=optional)
discards the top of pile 2. An illegal action stops the replay with the reason.

example:
  acesup show --seed 0 --index 0 --line "1>0 d d"
  acesup show --deck "$(acesup deal --seed 0)" --variant strict
"""


def add_arguments(p):
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--deck", help="52 card codes in deal order")
    src.add_argument("--seed", type=int, help="deal seed (with --index)")
    p.add_argument("--index", type=int, default=0, help="deal index with --seed (default 0)")
    p.add_argument("--line", default="", help="game line: actions separated by spaces")
    p.add_argument("--variant", default="standard",
                   help="rule set: standard, strict, easy, reverse, with +optional etc. (default standard)")


def run(args) -> int:
    from engine_rs_free.cards import format_deck, parse_deck
    from engine_rs_free.deals import deal
    from engine_rs_free.game import legal_actions, picture, replay_states
    from engine_rs_free.rules import rules_by_name

    rules = rules_by_name(args.variant)
    deck = parse_deck(args.deck) if args.deck is not None else deal(args.seed, args.index)
    print(f"deck: {format_deck(deck)}")
    print(f"variant: {rules.name}")
    states = replay_states(deck, args.line, rules)
    actions = args.line.split()
    print("start")
    print(picture(states[0]))
    for n, (action, state) in enumerate(zip(actions, states[1:]), start=1):
        print(f"\n{n}. {action}")
        print(picture(state))
    last = states[-1]
    legal = " ".join(str(a) for a in legal_actions(last, rules)) or "none (game over)"
    print(f"\nlegal now: {legal}")
    return 0
