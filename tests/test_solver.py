"""The exact solver against its twin: a brute force over game.py that is obviously correct.

The brute force walks every position reachable through ``game.legal_actions``
and ``game.apply`` (a set of the exact positions seen, nothing else) and takes
the largest score: that is the game value by definition (discards are never
undone, and the player may stop once the stock is empty). Full deals of the
standard game are too many positions for Python, so most comparisons start
from positions reached by random play with a short stock left, which reach
every situation (moves, lone moves, empty piles, the endgame, the deal), plus
full deals where the brute force is fast enough (strict, sensible).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine_rs_free import game
from engine_rs_free.cards import parse_deck
from engine_rs_free.deals import deal, deal_batch
from engine_rs_free.rules import FILL_ANY, relabel_reverse_to_standard, rules_by_name
from engine_rs_free.solver import solve_batch, solve_deck, solve_position

GOLDEN = Path(__file__).parent / "golden" / "edge_decks.txt"

ALL_OPTION_SETS = [
    (),
    ("optional",),
    ("sensible",),
    ("leftmost",),
    ("must_fill",),
    ("sensible", "leftmost"),
    ("sensible", "must_fill"),
    ("leftmost", "must_fill"),
    ("sensible", "leftmost", "must_fill"),
    ("optional", "sensible", "leftmost", "must_fill"),
]


def brute_value(state: game.State, rules) -> int:
    """The largest score of any position reachable from ``state`` (exhaustive, no pruning)."""
    rules = rules_by_name(rules)
    seen = {state}
    todo = [state]
    best = state.score
    while todo:
        s = todo.pop()
        best = max(best, s.score)
        for a in game.legal_actions(s, rules):
            t = game.apply(s, a, rules)
            if t not in seen:
                seen.add(t)
                todo.append(t)
    return best


def random_position(seed: int, index: int, rules, stock_left: int) -> game.State:
    """A position reached from deal (seed, index) by uniformly random legal play, ``stock_left`` cards to go."""
    rules = rules_by_name(rules)
    rng = np.random.default_rng([seed, index, stock_left])
    state = game.new_game(deal(seed, index), rules)
    while len(state.stock) > stock_left:
        acts = game.legal_actions(state, rules)
        state = game.apply(state, acts[int(rng.integers(len(acts)))], rules)
    return state


def check_position(state: game.State, rules) -> None:
    sol = solve_position(state, rules)
    want = brute_value(state, rules)
    assert sol.status == "solved"
    assert sol.max_score == want, (game.picture(state), rules.name, sol.line)
    assert sol.won == (want == game.WIN_SCORE)
    # the line replays from the position to exactly max_score
    s = state
    for tok in sol.line.split():
        s = game.apply(s, tok, rules)
    assert s.score == sol.max_score


def _variant_rules(preset: str, options: tuple[str, ...]):
    return rules_by_name("+".join((preset, *options)))


def _short_game_counts(preset: str, options: tuple[str, ...], total: int) -> tuple[int, int]:
    """(positions, stock cards left) for one variant: ``total`` positions per preset over the option sets."""
    per_set = max(1, total // len(ALL_OPTION_SETS))
    if preset == "easy" and "optional" in options:
        return max(1, per_set // 6), 4  # the brute force of easy+optional is slow in Python
    return per_set, 8


def _check_short_games(preset, options, total, seed):
    rules = _variant_rules(preset, options)
    count, stock_left = _short_game_counts(preset, options, total)
    for i in range(count):
        left = stock_left + 4 * (i % 2) if preset != "easy" else stock_left
        check_position(random_position(seed, i, rules.without_restrictions(), left), rules)


@pytest.mark.parametrize("preset", ["standard", "strict", "easy", "reverse"])
@pytest.mark.parametrize("options", ALL_OPTION_SETS, ids=lambda o: "+".join(o) or "plain")
def test_solver_matches_brute_force_on_short_games(preset, options):
    _check_short_games(preset, options, 60 if preset == "easy" else 300, seed=11)


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["standard", "strict", "easy", "reverse"])
@pytest.mark.parametrize("options", ALL_OPTION_SETS, ids=lambda o: "+".join(o) or "plain")
def test_solver_matches_brute_force_on_short_games_full_count(preset, options):
    # 3,000 positions per variant (300 for easy), on other positions than the default run
    _check_short_games(preset, options, 300 if preset == "easy" else 3000, seed=12)


def _check_full_deals(variant, count, seed):
    rules = rules_by_name(variant)
    decks = deal_batch(seed, 0, count)
    res = solve_batch(decks, rules)
    for n, d in enumerate(decks):
        want = brute_value(game.new_game(d, rules), rules)
        assert res.max_score[n] == want, (n, variant)
        assert res.won[n] == (want == 48)
        assert res.status[n] == "solved"


@pytest.mark.parametrize("variant", ["strict", "standard+sensible", "standard+sensible+leftmost+must_fill",
                                     "reverse+sensible+leftmost"])
def test_solver_matches_brute_force_on_full_deals(variant):
    _check_full_deals(variant, 20, seed=5)


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["strict", "standard+sensible", "standard+sensible+leftmost+must_fill",
                                     "standard+leftmost+must_fill", "standard+must_fill", "standard",
                                     "reverse"])
def test_solver_matches_brute_force_on_full_deals_full_count(variant):
    count = {"standard": 60, "reverse": 60, "standard+sensible": 300}.get(variant, 1000)
    _check_full_deals(variant, count, seed=6)


@pytest.mark.parametrize("variant", ["standard", "standard+sensible", "strict", "reverse", "strict+leftmost",
                                     "standard+sensible+leftmost+must_fill", "standard+must_fill"])
def test_every_line_replays_to_max_score(variant):
    decks = deal_batch(2026, 0, 60)
    res = solve_batch(decks, variant)
    for n, d in enumerate(decks):
        states = game.replay_states(d, res.lines[n], variant)
        assert states[-1].score == res.max_score[n]
        assert res.moves[n] == sum(1 for a in res.lines[n].split() if ">" in a)
        choices = [len(game.legal_actions(s, variant)) + (not s.stock) for s in states]
        decisions = sum(1 for c in choices[:-1] if c > 1) + (choices[-1] > 1 and not states[-1].stock)
        assert res.decisions[n] == decisions


def _replay_counts(deck, line, variant):
    """Moves and decision points of a line, counted over game.State (the twin of the solver's line finish)."""
    states = game.replay_states(deck, line, variant)
    choices = [len(game.legal_actions(s, variant)) + (not s.stock) for s in states]
    moves = sum(1 for a in line.split() if ">" in a)
    return moves, sum(1 for c in choices[:-1] if c > 1) + (choices[-1] > 1 and not states[-1].stock)


@pytest.mark.parametrize("variant,count", [("strict", 1500), ("strict+leftmost+must_fill", 300),
                                           ("standard+sensible", 200), ("reverse+sensible+leftmost", 200)])
def test_native_line_counts_match_a_replay(variant, count):
    """The native search's moves and decisions (counted from the frames' action counts, lone-free
    lines, or in a replay, lines with lone moves) against a replay over game.State, deal for deal."""
    decks = deal_batch(2027, 0, count)
    res = solve_batch(decks, variant)
    for n, d in enumerate(decks):
        assert (res.moves[n], res.decisions[n]) == _replay_counts(d, res.lines[n], variant), (n, variant)
    # want_lines=False changes no column but the lines
    quiet = solve_batch(decks, variant, want_lines=False)
    assert quiet.lines is None
    for col in ("max_score", "won", "nodes", "moves", "decisions"):
        assert np.array_equal(getattr(quiet, col), getattr(res, col)), col
    assert quiet.status == res.status


def test_generic_search_needs_the_natives():
    from engine_rs_free.solver import core

    starts = core.deck_inputs(deal_batch(1, 0, 2), natives=False)
    assert starts.natives.shape == (2, 0)
    with pytest.raises(ValueError, match="natives"):
        core.run(starts, True, rules_by_name("strict"), None, False, search="generic")
    full = core.deck_inputs(deal_batch(1, 0, 2))
    assert np.array_equal(core.run(full, True, rules_by_name("strict"), None, False, search="auto")[0],
                          core.run(starts, True, rules_by_name("strict"), None, False, search="auto")[0])


NATIVE_VARIANTS = ["standard", "strict", "reverse", "standard+sensible", "strict+sensible", "standard+leftmost",
                   "standard+must_fill", "strict+leftmost+must_fill", "standard+sensible+leftmost+must_fill",
                   "reverse+sensible+leftmost"]


def _check_native_equals_generic(variant, count, seed):
    """The native-pile search (fresh deals) against the general search, deck for deck."""
    decks = deal_batch(seed, 0, count)
    fast = solve_batch(decks, variant)
    slow = solve_batch(decks, variant, search="generic")
    assert np.array_equal(fast.max_score, slow.max_score), variant
    assert np.array_equal(fast.won, slow.won)
    assert fast.status == slow.status == ["solved"] * count
    # the same tree, met in the same order: only the table's replacements may differ (strict's
    # general search also cuts with its bound, which the native one does without)
    if not variant.startswith("strict"):
        assert abs(int(fast.nodes.sum()) - int(slow.nodes.sum())) <= 0.01 * int(slow.nodes.sum())
    else:
        assert 1.0 <= fast.nodes.sum() / slow.nodes.sum() <= 1.15
    for n in range(0, count, max(1, count // 50)):
        assert game.replay(decks[n], fast.lines[n], variant).score == fast.max_score[n]


@pytest.mark.parametrize("variant", NATIVE_VARIANTS)
def test_native_search_equals_generic_search(variant):
    count = 60 if variant in ("standard", "reverse", "standard+leftmost", "standard+must_fill") else 600
    _check_native_equals_generic(variant, count, seed=41)


@pytest.mark.slow
@pytest.mark.parametrize("variant", NATIVE_VARIANTS)
def test_native_search_equals_generic_search_full_count(variant):
    count = 1000 if variant in ("standard", "reverse", "standard+leftmost", "standard+must_fill") else 10_000
    _check_native_equals_generic(variant, count, seed=42)


@settings(max_examples=300, deadline=None)
@given(deck=st.permutations(range(52)),
       variant=st.sampled_from(["strict", "strict+sensible", "strict+leftmost+must_fill", "standard+sensible",
                                "standard+must_fill", "standard+sensible+leftmost+must_fill",
                                "reverse+sensible+leftmost"]))
def test_native_search_equals_generic_search_on_any_deck(deck, variant):
    decks = np.array([deck], np.uint8)
    fast = solve_batch(decks, variant)
    slow = solve_batch(decks, variant, search="generic")
    assert (fast.max_score[0], fast.status) == (slow.max_score[0], slow.status)
    assert game.replay(decks[0], fast.lines[0], variant).score == fast.max_score[0]


def test_reverse_equals_standard_on_relabelled_decks():
    decks = deal_batch(99, 0, 80)
    rev = solve_batch(decks, "reverse")
    std = solve_batch(np.stack([relabel_reverse_to_standard(d) for d in decks]), "standard")
    assert np.array_equal(rev.max_score, std.max_score)
    assert np.array_equal(rev.won, std.won)


def test_solve_deck_equals_solve_batch():
    decks = deal_batch(3, 10, 20)
    res = solve_batch(decks, "standard")
    for n, d in enumerate(decks):
        sol = solve_deck(d, "standard")
        assert (sol.max_score, sol.won, sol.status) == (res.max_score[n], res.won[n], res.status[n])
        assert game.replay(d, sol.line, "standard").score == sol.max_score


def test_node_limit_gives_up_honestly():
    decks = deal_batch(7, 0, 30)
    full = solve_batch(decks, "standard")
    hard = int(np.argmax(full.nodes))
    limited = solve_batch(decks[hard:hard + 1], "standard", node_limit=int(full.nodes[hard]) // 10)
    assert limited.status == ["gave_up"]
    assert limited.max_score[0] <= full.max_score[hard]
    assert game.replay(decks[hard], limited.lines[0], "standard").score == limited.max_score[0]
    again = solve_batch(decks[hard:hard + 1], "standard", node_limit=int(full.nodes[hard]))
    assert again.status == ["solved"] and again.max_score[0] == full.max_score[hard]


def test_restrictions_only_lower_the_value():
    decks = deal_batch(8, 0, 60)
    free = solve_batch(decks, "standard").max_score
    for opts in ["sensible", "leftmost", "sensible+leftmost+must_fill"]:
        assert np.all(solve_batch(decks, "standard+" + opts).max_score <= free)
    # optional discards only add choices (full deals of +optional are too slow for the default run)
    for i in range(20):
        state = random_position(8, i, "standard", 12)
        assert solve_position(state, "standard+optional").max_score >= solve_position(state, "standard").max_score


def _golden_decks():
    out = []
    for line in GOLDEN.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, _, rest = line.partition(": ")
        variant, _, deck = rest.strip().partition(" ")
        out.append(pytest.param(variant, deck.strip(), id=f"{name.strip()} [{variant}]"))
    return out


@pytest.mark.parametrize("variant,deck", _golden_decks())
def test_edge_decks(variant, deck):
    rules = rules_by_name(variant)
    d = parse_deck(deck)
    sol = solve_deck(d, rules)
    assert sol.status == "solved"
    assert game.replay(d, sol.line, rules).score == sol.max_score
    if rules.fill == FILL_ANY or rules.optional_discards:
        # too many positions for the Python brute force: the variant can do all that
        # its base game can, so it reaches at least the base game's value (checked exactly)
        base = rules_by_name("standard" if rules.fill == FILL_ANY else rules.preset)
        base = base.with_options(*rules.restrictions)
        assert sol.max_score >= brute_value(game.new_game(d, base), base)
    else:
        assert sol.max_score == brute_value(game.new_game(d, rules), rules)


# --------------------------------------------------------------------------- command line


def test_cli_solve_jsonl_keys_and_lines(capsys):
    import json

    from pipeline.cli import main

    assert main(["solve", "--seed", "4", "--index", "10", "--count", "3", "--format", "jsonl",
                 "--sensible", "--lines"]) == 0
    rows = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [r["index"] for r in rows] == [10, 11, 12]
    for r in rows:
        assert list(r) == ["seed", "index", "variant", "max_score", "won", "status", "nodes", "line"]
        d = deal(4, r["index"])
        assert game.replay(d, r["line"], "standard+sensible").score == r["max_score"]
        assert r["max_score"] == solve_deck(d, "standard+sensible").max_score


def test_cli_solve_jsonl_without_lines_in_chunks(capsys):
    """Without --lines the rows are the same but for the line; the chunks (1, 16, 256, …) keep the order."""
    import json

    from pipeline.cli import main

    assert main(["solve", "--seed", "5", "--index", "3", "--count", "40", "--format", "jsonl", "--variant", "strict"]) == 0
    rows = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [r["index"] for r in rows] == list(range(3, 43))
    res = solve_batch(deal_batch(5, 3, 40), "strict", want_lines=False)
    assert [r["max_score"] for r in rows] == res.max_score.tolist()
    assert [r["nodes"] for r in rows] == res.nodes.tolist()
    assert all("line" not in r and r["variant"] == "strict" for r in rows)


@given(st.lists(st.tuples(st.integers(0, 48), st.sampled_from(["solved", "gave_up"]), st.integers(0, 2**62),
                          st.text(max_size=30), st.integers(0, 2**40)), min_size=1, max_size=20),
       st.sampled_from([{}, {"line_number": None}, {"seed": None, "index": None}]), st.booleans(),
       st.text(min_size=1, max_size=12))
def test_jsonl_rows_are_what_json_dumps_writes(rows, keys, lines, variant):
    import json
    from types import SimpleNamespace

    from pipeline.commands.solve import jsonl_rows

    res = SimpleNamespace(max_score=np.array([r[0] for r in rows], dtype=np.int8),
                          won=np.array([r[0] >= 48 for r in rows]), status=[r[1] for r in rows],
                          nodes=np.array([r[2] for r in rows], dtype=np.int64), lines=[r[3] for r in rows])
    where = {k: [r[4] for r in rows] for k in keys}
    want = []
    for n, r in enumerate(rows):
        row = {**{k: v[n] for k, v in where.items()}, "variant": variant, "max_score": r[0], "won": r[0] >= 48,
               "status": r[1], "nodes": r[2]}
        if lines:
            row["line"] = r[3]
        want.append(json.dumps(row) + "\n")
    assert jsonl_rows(where, variant, res, lines) == "".join(want)


def test_cli_solve_reports_bad_lines_and_solves_the_others(tmp_path, capsys):
    import json

    from engine_rs_free.cards import format_deck
    from pipeline.cli import main

    decks = deal_batch(9, 0, 3)
    text = [format_deck(decks[0]), "AS KS QS", "# a comment", format_deck(decks[1]), format_deck(decks[2])[:-3] + " 2C"]
    path = tmp_path / "decks.txt"
    path.write_text("\n".join(text) + "\n")
    rc = main(["solve", "--decks", str(path), "--variant", "strict", "--format", "jsonl"])
    captured = capsys.readouterr()
    assert rc == 2
    rows = [json.loads(x) for x in captured.out.splitlines()]
    assert [r["line_number"] for r in rows] == [1, 4]
    assert "line 2" in captured.err and "line 5" in captured.err
    assert rows[1]["max_score"] == solve_deck(decks[1], "strict").max_score


def test_cli_solve_text_shows_the_game(capsys):
    from pipeline.cli import main

    assert main(["solve", "--seed", "1", "--index", "0", "--variant", "reverse", "--node-limit", "50"]) == 0
    out = capsys.readouterr().out
    assert "max_score" in out and "line:" in out and "start" in out


def test_cli_play_refuses_illegal_actions_then_shows_the_solver(monkeypatch, capsys):
    import io

    from pipeline.cli import main

    monkeypatch.setattr("sys.stdin", io.StringIO("d\n3>3\nx9\nd d\nstop\n"))
    assert main(["play", "--seed", "2026", "--index", "7", "--variant", "strict"]) == 0
    out = capsys.readouterr().out
    assert out.count("refused") == 2
    assert "your line: d d d" in out
    sol = solve_deck(deal(2026, 7), "strict")
    assert f"solver line ({sol.max_score}): {sol.line}" in out
