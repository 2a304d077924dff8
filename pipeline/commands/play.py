"""acesup play: play a deal in the terminal, then see what the solver could do with it."""

from __future__ import annotations

NAME = "play"
HELP = "play a deal interactively, then see whether it was winnable and the solver's line"
DESCRIPTION = """\
Play one deal in the terminal. The piles are shown (bottom card first, top
card last) with the legal actions; type an action and press Enter:

  d        deal four cards          2>0    move the top of pile 2 into empty pile 0
  2:1>0    (easy) a deeper card     x2     (discards=optional) discard the top of pile 2
  stop     end the game (or end of input)

An illegal action is refused with the reason. At the end the game line is
printed (paste it into 'acesup show --line'), and the exact solver says
whether the deal could be won by a player who knew the stock order, with its
line. Actions can also be piped in, one a line (or several on a line).

example:
  acesup play --seed 2026 --index 7
  printf 'd\\nd\\nstop\\n' | acesup play --seed 2026 --index 7 --variant strict
"""


def add_arguments(p):
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--deck", help="52 card codes in deal order")
    src.add_argument("--seed", type=int, help="deal seed (with --index)")
    p.add_argument("--index", type=int, default=0, help="deal index with --seed (default 0)")
    p.add_argument("--variant", default="standard",
                   help="rule set: standard, strict, easy, reverse, with +optional etc. (default standard)")
    p.add_argument("--node-limit", type=int, default=None, help="node limit of the solver at the end")


STOP_WORDS = ("stop", "q", "quit", "exit")


def run(args) -> int:
    import sys

    from engine_rs_free.cards import format_deck, parse_deck
    from engine_rs_free.deals import deal
    from engine_rs_free.game import (
        ActionParseError,
        Action,
        apply,
        format_line,
        legal_actions,
        new_game,
        picture,
        why_illegal,
    )
    from engine_rs_free.rules import rules_by_name
    from engine_rs_free.solver import solve_deck

    rules = rules_by_name(args.variant)
    deck = parse_deck(args.deck) if args.deck is not None else deal(args.seed, args.index)
    out = sys.stdout
    out.write(f"deck: {format_deck(deck)}\nvariant: {rules.name}\n")
    state = new_game(deck, rules)
    line: list[Action] = []
    pending: list[str] = []
    while True:
        legal = legal_actions(state, rules)
        out.write("\n" + picture(state) + "\n")
        if not legal:
            out.write("no legal action left: the game is over\n")
            break
        options = " ".join(str(a) for a in legal)
        out.write(f"legal: {options}" + ("  (or stop)" if not state.stock else "  (stop ends the game early)") + "\n")
        if not pending:
            out.write("> ")
            out.flush()
            text = sys.stdin.readline()
            if not text:
                out.write("\n(end of input)\n")
                break
            pending = text.split()
            if not pending:
                continue
        token = pending.pop(0)
        if token.lower() in STOP_WORDS:
            break
        try:
            action = Action.from_text(token)
        except ActionParseError as exc:
            out.write(f"refused: {exc}\n")
            pending = []
            continue
        reason = why_illegal(state, action, rules)
        if reason is not None:
            out.write(f"refused: illegal action {token!r}: {reason}\n")
            pending = []
            continue
        state = apply(state, action, rules)
        line.append(action)
    out.write(f"\nyour score: {state.score} of 48" + (" - won!" if state.won else "") + "\n")
    out.write(f"your line: {format_line(line) or '(no action)'}\n")
    sol = solve_deck(deck, rules, node_limit=args.node_limit)
    if sol.status != "solved":
        out.write(f"the solver gave up after {sol.nodes} positions; its best score was {sol.max_score}\n")
    elif sol.won:
        out.write("this deal was winnable by a player who knew the stock order\n")
    else:
        out.write(f"this deal was not winnable even knowing the stock order; the best score is {sol.max_score}\n")
    out.write(f"solver line ({sol.max_score}): {sol.line or '(no action)'}\n")
    return 0
