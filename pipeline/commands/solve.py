"""acesup solve: the exact clairvoyant solver on one deck, a deck file, or seeded deals."""

from __future__ import annotations

NAME = "solve"
HELP = "solve decks exactly: the best score a player who knows the stock order can reach"
DESCRIPTION = """\
Solve each deck exactly (engine_rs_free.solver): the best score reachable by a
player who knows the order of the stock, whether the deal can be won, and a
game line that reaches that score. One result per deck, in input order.

Decks come from --deck (one deck), --decks FILE (one deck a line; '-' reads
standard input; the file is streamed, so any size works in bounded memory), or
--seed/--index/--count (seeded deals). A malformed line of a deck file is
reported with its line number on standard error; the other lines are still
solved, and the exit code is 2 at the end. A deck file that holds no deck at
all is an error too (exit 2).

--format jsonl prints one JSON object a deck with the keys max_score, won,
status ('solved', or 'gave_up' when --node-limit stopped the search: then
max_score is only a lower bound) and nodes, plus where the deck came from
(line_number, or seed and index), and line (the game line) with --lines:
finding the line costs more than the search on easy rule sets, so a big file
asks for it only when it is wanted. --format text shows each game move by move.

examples:
  acesup solve --seed 2026 --index 0 --count 5 --format jsonl --lines
  acesup deal --seed 1 --count 1000 > decks.txt && acesup solve --decks decks.txt --sensible --leftmost --must-fill
  acesup solve --deck "$(acesup deal --seed 0)" --variant strict
"""

def add_arguments(p):
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--deck", help="one deck: 52 card codes in deal order")
    src.add_argument("--decks", metavar="FILE", help="deck file, one deck a line ('-' = standard input)")
    src.add_argument("--seed", type=int, help="deal seed (with --index and --count)")
    p.add_argument("--index", type=int, default=0, help="first deal index with --seed (default 0)")
    p.add_argument("--count", type=int, default=1, help="how many deals with --seed (default 1)")
    p.add_argument("--variant", default="standard", help="standard, strict, easy or reverse (default standard)")
    p.add_argument("--discards", choices=("forced", "optional"), default="forced",
                   help="forced (default) or optional discards")
    p.add_argument("--sensible", action="store_true", help="never move the only card of a pile")
    p.add_argument("--leftmost", action="store_true", help="moves go only into the lowest-numbered empty pile")
    p.add_argument("--must-fill", action="store_true", help="no deal while a card of a pile of two or more can move into an empty pile")
    p.add_argument("--node-limit", type=int, default=None,
                   help="give up a deck after this many positions (its result says 'gave_up')")
    p.add_argument("--format", choices=("text", "jsonl"), default="text", help="output format (default text)")
    p.add_argument("--lines", action="store_true",
                   help="with --format jsonl, add each deck's game line (text always shows it)")


def solver_rules(args):
    """The rule set the solver searches: the game (variant, discards) plus the solver player's restrictions."""
    from engine_rs_free.players import parse_player, solver_rules
    from engine_rs_free.rules import rules_by_name

    game = rules_by_name(args.variant)
    if args.discards == "optional":
        game = game.with_options("optional")
    flags = (args.sensible, "sensible"), (args.leftmost, "leftmost"), (args.must_fill, "must_fill")
    restrictions = "+".join(name for flag, name in flags if flag)
    return solver_rules(parse_player(f"solver:{restrictions}" if restrictions else "solver"), game)


# Decks solved per compiled call: small first, so that the first results of a
# stream appear at once, then large, so that a big file spends its time in the search.
CHUNK_SIZES = (1, 16, 256, 4096)


def _sources(args, bad):
    """Yield ``(where, decks)`` chunks in input order: ``where`` maps a key (line_number, or seed
    and index) to one value a deck, ``decks`` is ``uint8[n, 52]``. Malformed deck-file lines go
    to ``bad`` and stderr."""
    import sys

    from engine_rs_free.cards import iter_deck_chunks, parse_deck
    from engine_rs_free.deals import deal_batch
    from pipeline.errors import UserError

    if args.deck is not None:
        yield {}, parse_deck(args.deck)[None, :]
        return
    if args.decks is not None:
        try:
            fh = sys.stdin if args.decks == "-" else open(args.decks, encoding="utf-8")
        except OSError as exc:
            raise UserError(f"cannot read deck file {args.decks!r}: {exc.strerror}; give a readable file or '-'") from None
        try:
            for chunk in iter_deck_chunks(fh, CHUNK_SIZES):
                for number, error in chunk.errors:
                    bad.append(number)
                    print(f"acesup solve: error: {args.decks}: {error}", file=sys.stderr)
                if len(chunk.decks):
                    yield {"line_number": chunk.line_numbers.tolist()}, chunk.decks
        finally:
            if fh is not sys.stdin:
                fh.close()
        return
    if args.count < 1:
        raise UserError(f"--count {args.count} is not positive; give 1 or more")
    done = 0
    sizes = iter(CHUNK_SIZES)
    while done < args.count:
        n = min(next(sizes, CHUNK_SIZES[-1]), args.count - done)
        first = args.index + done
        yield {"seed": [args.seed] * n, "index": list(range(first, first + n))}, deal_batch(args.seed, first, n)
        done += n


def jsonl_rows(where: dict, variant: str, res, lines: bool) -> str:
    """The JSON lines of one chunk of results, exactly as ``json.dumps`` writes each row's dict
    (``where`` keys, variant, max_score, won, status, nodes, and line when asked for).

    Built with one format string a row instead of ``json.dumps``: the keys and the
    value types are fixed, so only the variant and the line need escaping
    (tests/test_solver.py holds this to ``json.dumps``).
    """
    import json

    def literal(value) -> str:  # a JSON string as a format-string literal
        return json.dumps(value).replace("{", "{{").replace("}", "}}")

    quoted = {status: json.dumps(status) for status in set(res.status)}
    keys = list(where)
    head = "".join(f"{literal(k)}: {{}}, " for k in keys)
    template = "{{" + head + f'"variant": {literal(variant)}, "max_score": {{}}, "won": {{}}, ' \
        '"status": {}, "nodes": {}' + (', "line": {}' if lines else "") + "}}\n"
    columns = [where[k] for k in keys] + [
        res.max_score.tolist(),
        ["true" if w else "false" for w in res.won.tolist()],
        [quoted[status] for status in res.status],
        res.nodes.tolist(),
    ]
    if lines:
        columns.append([json.dumps(line) for line in res.lines])
    return "".join(template.format(*row) for row in zip(*columns))


def format_game(deck, line: str, rules) -> str:
    """A game line as a readable game: each action with the piles after it."""
    from engine_rs_free.game import format_position, replay_states

    states = replay_states(deck, line, rules)
    out = [f"   start      {format_position(states[0])}   score {states[0].score}"]
    for n, (action, state) in enumerate(zip(line.split(), states[1:]), start=1):
        out.append(f"{n:4d}. {action:<6s} {format_position(state)}   score {state.score}, stock {len(state.stock)}")
    return "\n".join(out)


def run(args) -> int:
    import sys

    from engine_rs_free.cards import format_deck
    from engine_rs_free.solver import solve_batch
    from pipeline.errors import UserError

    rules = solver_rules(args)
    if args.node_limit is not None and args.node_limit < 1:
        raise UserError(f"--node-limit {args.node_limit} is not positive; give 1 or more, or leave it out")
    text = args.format == "text"
    bad: list[int] = []
    out = sys.stdout
    solved = 0
    for where, decks in _sources(args, bad):
        solved += len(decks)
        res = solve_batch(decks, rules, node_limit=args.node_limit, want_lines=text or args.lines)
        if not text:
            out.write(jsonl_rows(where, rules.name, res, args.lines))
            out.flush()
            continue
        for n, deck in enumerate(decks):
            origin = ", ".join(f"{k} {v[n]}" for k, v in where.items()) or "deck"
            verdict = "won" if res.won[n] else "not won"
            bound = " (a lower bound: the node limit stopped the search)" if res.status[n] == "gave_up" else ""
            out.write(f"{origin}: {rules.name}: max_score {int(res.max_score[n])}{bound}, {verdict}, "
                      f"{res.status[n]}, {int(res.nodes[n])} nodes\n")
            out.write(f"deck: {format_deck(deck)}\n")
            out.write(f"line: {res.lines[n] or '(no action)'}\n")
            out.write(format_game(deck, res.lines[n], rules) + "\n\n")
        out.flush()
    if bad:
        shown = ", ".join(str(b) for b in bad[:10]) + (" …" if len(bad) > 10 else "")
        print(f"acesup solve: error: {len(bad)} malformed line(s) skipped (line {shown}); "
              f"fix them and solve again", file=sys.stderr)
        return 2
    if solved == 0:
        source = "standard input" if args.decks == "-" else f"deck file {args.decks!r}"
        raise UserError(f"{source} holds no decks (it is empty, or has only blank and '#' lines); "
                        f"give one deck a line, 52 card codes, e.g. from 'acesup deal --seed 1 --count 10'")
    return 0
