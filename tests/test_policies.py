"""Policies: names, the random draw, and what each policy does on hand-built positions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from engine_rs_free.batch import _uniform_choice
from engine_rs_free.deals import deal_batch
from engine_rs_free import policies
from engine_rs_free.game import (
    DEAL,
    Action,
    State,
    apply,
    legal_actions,
    legal_moves,
    new_game,
    parse_position,
    replay,
    resolve_discards,
    strength_tuple,
)
from engine_rs_free.policies import (
    MAX_ACTIONS,
    POLICY_NAMES,
    UnknownPolicyError,
    _after,
    _discards_after,
    decide,
    parse_policy,
    play_scalar,
    uniform_choice,
)
from engine_rs_free.rules import FILL_ACE, STANDARD, rules_by_name
from engine_rs_free.players import canonical_player

STOCK = "2H 3H 4H 5H"  # four cards left: dealing is possible


def pos(piles: str, stock: str = STOCK):
    state = parse_position(piles, stock)
    assert resolve_discards(state, STANDARD) == state, "test positions must have no discard pending"
    return state


# ---------------------------------------------------------------------------------------------
# names


@pytest.mark.parametrize(
    "text, canonical",
    [
        ("nomove", "nomove"),
        ("Greedy", "greedy"),
        (" aces ", "aces"),
        ("random", "random"),
        ("human", "human:sacrifice=3"),
        ("human:sacrifice=0", "human:sacrifice=0"),
        ("human: sacrifice = 07", "human:sacrifice=7"),
        ("lookahead", "lookahead:depth=1"),
        ("lookahead:depth=3", "lookahead:depth=3"),
    ],
)
def test_canonical_names(text, canonical):
    assert parse_policy(text).name == canonical
    assert parse_policy(canonical).name == canonical
    assert canonical_player(text) == canonical


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("greedyy", "unknown policy 'greedyy'; known policies: nomove, random, greedy, aces, "
                    "human:sacrifice=0..48 (default 3), lookahead:depth=1..4 (default 1)"),
        ("solver", "unknown policy 'solver'; known policies: nomove"),
        ("human:depth=2", "unknown parameter 'depth' in player 'human:depth=2'; parameters of human: sacrifice"),
        ("greedy:x=1", "parameters of greedy: none"),
        ("human:sacrifice=", "needs a value"),
        ("human:sacrifice=abc", "needs a whole number, e.g. 'human:sacrifice=3'"),
        ("human:sacrifice=-1", "needs a whole number"),
        ("human:sacrifice=49", "out of range; use 0..48"),
        ("lookahead:depth=0", "out of range; use 1..4"),
        ("human:sacrifice=1,sacrifice=2", "given twice"),
        ("human:", "ends with ':'"),
    ],
)
def test_name_errors_say_what_is_wrong(text, fragment):
    with pytest.raises(UnknownPolicyError) as err:
        parse_policy(text)
    assert fragment in str(err.value)
    assert isinstance(err.value, ValueError)


@given(
    kind=st.sampled_from(POLICY_NAMES),
    value=st.integers(min_value=0, max_value=60),
    spaces=st.sampled_from(["", " "]),
)
def test_canonical_name_is_a_fixed_point(kind, value, spaces):
    params = {"human": "sacrifice", "lookahead": "depth"}
    text = kind if kind not in params else f"{kind}:{spaces}{params[kind]}{spaces}={spaces}{value}"
    try:
        spec = parse_policy(text)
    except UnknownPolicyError:
        assert kind in params and not (0 <= value <= (48 if kind == "human" else 4) and (kind != "lookahead" or value >= 1))
        return
    assert parse_policy(spec.name) == spec
    assert canonical_player(spec.name) == spec.name


# ---------------------------------------------------------------------------------------------
# the random draw


def test_uniform_choice_is_deterministic_and_in_range():
    draws = [uniform_choice(7, 99, 5, k) for k in range(200)]
    assert draws == [uniform_choice(7, 99, 5, k) for k in range(200)]
    assert set(draws) <= set(range(7))
    assert draws != [uniform_choice(7, 99, 6, k) for k in range(200)]  # another deal, other draws
    assert draws != [uniform_choice(7, 100, 5, k) for k in range(200)]  # another seed, other draws


def test_uniform_choice_is_uniform():
    n, trials = 5, 20_000
    counts = np.bincount([uniform_choice(n, 1, i // 50, i % 50) for i in range(trials)], minlength=n)
    expected = trials / n
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    assert chi2 < 20.5, counts  # chi-square, 4 degrees of freedom: p < 0.0004 to fail by chance


@settings(max_examples=300, deadline=None)
@given(
    n=st.one_of(st.integers(min_value=2, max_value=60), st.integers(min_value=2**31, max_value=2**32 - 1)),
    seed=st.integers(min_value=0, max_value=2**64 - 1),
    index=st.integers(min_value=0, max_value=2**63 - 1),
    decision=st.integers(min_value=0, max_value=2**32 - 2),
)
def test_uniform_choice_twin_in_compiled_code(n, seed, index, decision):
    # n near 2**32 rejects about half of all words, so the multi-word and next-block paths run too
    expected = uniform_choice(n, seed, index, decision)
    got = _uniform_choice(n, np.uint32(seed & 0xFFFFFFFF), np.uint32(seed >> 32), np.uint32(index & 0xFFFFFFFF),
                          np.uint32(index >> 32), decision)
    assert got == expected
    assert 0 <= expected < n


# ---------------------------------------------------------------------------------------------
# what each policy does


def test_greedy_makes_the_move_with_most_discards():
    # 0>2 uncovers 2C, which 3C on pile 3 kills; 3>2 discards nothing; 1>2 moves a lone card
    state = pos("2C 7H | 5D | - | 9S 3C")
    assert decide(state, "standard", "greedy") == Action.from_text("0>2")
    assert decide(state, "standard", "nomove") == DEAL


def test_greedy_deals_when_no_move_discards():
    state = pos("2C 7H | 5D | - | 9S")
    assert decide(state, "standard", "greedy") == DEAL


def test_greedy_stops_when_the_stock_is_empty_and_no_move_discards():
    state = pos("2C 7H | 5D | - | 9S", stock="")
    assert decide(state, "standard", "greedy") is None


def test_aces_and_human_threshold():
    # 0>2 gives one discard (2C under 7H dies to AC); 3>2 moves the Ace and discards nothing
    state = pos("2C 7H | 5D | - | 9S AC")
    assert decide(state, "standard", "greedy") == Action.from_text("0>2")
    assert decide(state, "standard", "aces") == Action.from_text("3>2")
    assert decide(state, "standard", "human:sacrifice=0") == Action.from_text("0>2")
    assert decide(state, "standard", "human:sacrifice=1") == Action.from_text("3>2")
    assert decide(state, "standard", "human") == Action.from_text("3>2")


def test_human_places_an_ace_rather_than_deal_when_it_costs_nothing():
    state = pos("9S AC | 5D | - | 8H")
    assert decide(state, "standard", "greedy") == DEAL
    assert decide(state, "standard", "human:sacrifice=0") == Action.from_text("0>2")


def test_the_ace_is_the_top_rank_of_the_variant():
    # in reverse the King is the top rank: KC is the "Ace" and AC is the lowest club
    state = parse_position("9S KC | 5D | - | 8H", STOCK)
    assert decide(state, "reverse", "aces") == Action.from_text("0>2")
    state = parse_position("9S AC | 5D | - | 8H", STOCK)
    assert decide(state, "reverse", "aces") == DEAL


def test_no_policy_but_random_moves_a_lone_card():
    state = pos("- | AH | 5D | 9S")
    for policy in ("nomove", "greedy", "aces", "human", "lookahead", "lookahead:depth=3"):
        assert decide(state, "standard", policy) == DEAL
    moves = {decide(state, "standard", "random", seed=3, decision=k) for k in range(60)}
    assert moves == set(legal_actions(state, "standard"))


def test_lookahead_sees_a_discard_two_moves_away():
    # no single move discards, so greedy deals; 0>1 then 3>2 uncovers 3C onto 2C
    state = pos("2C 7H | - | - | 3C 9D")
    assert decide(state, "standard", "greedy") == DEAL
    choice = decide(state, "standard", "lookahead")
    assert choice is not None and choice.kind == "m"


def test_a_lone_card_never_blocks_a_deal_under_must_fill():
    # RULES.md: only a card of a pile of two or more forbids dealing; the lone cards here may still
    # move (random does so sometimes), but every other policy deals, as without must_fill
    state = pos("- | KH | 5D | 9S")
    assert str(legal_actions(state, "standard+must_fill")[0]) == "d"
    for policy in ("nomove", "greedy", "aces", "human", "lookahead"):
        assert decide(state, "standard+must_fill", policy) == DEAL
    choices = {str(decide(state, "standard+must_fill", "random", seed=1, decision=k)) for k in range(80)}
    assert "d" in choices and any(">" in c for c in choices)


def test_must_fill_makes_a_policy_fill_instead_of_dealing():
    state = pos("2C 7H | 5D | - | 9S")  # 0>2 discards nothing, but dealing is forbidden
    assert decide(state, "standard+must_fill", "greedy") == Action.from_text("0>2")
    assert decide(state, "standard+must_fill", "nomove") == Action.from_text("0>2")


# ---------------------------------------------------------------------------------------------
# whole games on the scalar twin


DECKS = deal_batch(77, 0, 60)


@pytest.mark.parametrize("policy", ["nomove", "random", "greedy", "aces", "human", "lookahead"])
def test_games_replay_and_count(policy):
    for i, deck in enumerate(DECKS[:30]):
        res = play_scalar(deck, "standard", policy, seed=77, index=i)
        actions = res.line.split()
        assert replay(deck, res.line, "standard").score == res.score
        assert res.won == (res.score == 48)
        assert res.moves == sum(1 for a in actions if ">" in a)
        assert res.decisions <= len(actions) + 1
        assert actions.count("d") == 12 or policy == "random" or res.score < 48
        if policy == "nomove":
            assert set(actions) == {"d"} and res.moves == 0


@pytest.mark.parametrize("policy", ["nomove", "random", "greedy", "aces", "human", "lookahead"])
def test_optional_discards_play_as_forced(policy):
    for i, deck in enumerate(DECKS[:20]):
        forced = play_scalar(deck, "easy", policy, seed=5, index=i)
        optional = play_scalar(deck, "easy+optional", policy, seed=5, index=i)
        assert (optional.score, optional.moves, optional.decisions) == (forced.score, forced.moves, forced.decisions)
        assert " ".join(a for a in optional.line.split() if not a.startswith("x")) == forced.line
        assert optional.line.count("x") == optional.score
        assert replay(deck, optional.line, "easy+optional").score == optional.score


def test_random_stops_at_max_actions():
    lengths = [len(play_scalar(d, "standard+must_fill", "random", seed=1, index=i, max_actions=25).line.split())
               for i, d in enumerate(DECKS[:40])]
    assert max(lengths) == 25 and min(lengths) < 25  # the cap binds in some games, not all
    full = [len(play_scalar(d, "standard", "random", seed=1, index=i).line.split()) for i, d in enumerate(DECKS[:40])]
    assert max(full) < MAX_ACTIONS  # with dealing always allowed, random never gets near the default cap
    with pytest.raises(ValueError, match="max_actions=401 is out of range"):
        play_scalar(DECKS[0], "standard", "random", seed=1, index=0, max_actions=MAX_ACTIONS + 1)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32), st.sampled_from(["standard", "strict", "easy", "reverse", "standard+optional",
                                               "easy+optional"]))
@example(2389, "strict")  # ends with an empty pile and no move (only an Ace moves in strict)
def test_discards_after_a_move_counted_without_states(seed, variant):
    # policies._discards_after (pile lists) against the State it stands for (policies._after).
    rules = rules_by_name(variant)
    strength = strength_tuple(rules)
    rng = np.random.default_rng(seed)
    state = new_game(rng.permutation(52).astype(np.uint8), rules)
    checked = 0

    def check_moves(state):  # every position of the game, the last one too
        view = State(state.piles, (), state.discarded)
        moves = legal_moves(view, rules)
        for m in moves:
            assert _discards_after(view, m, strength) == _after(view, m, rules).score - view.score
        return len(moves)

    while True:
        checked += check_moves(state)
        legal = legal_actions(state, rules)
        if not legal:
            break
        state = apply(state, legal[int(rng.integers(len(legal)))], rules)
        if not state.stock and rng.random() < 0.2:
            checked += check_moves(state)
            break
    # not vacuous: a game that empties a pile has a move to check, except in strict, where only an
    # Ace moves (seed 2389 ends with an empty pile and no Ace on top of another pile)
    assert checked > 0 or rules.fill == FILL_ACE or not any(not p for p in state.piles)


def test_play_scalar_refuses_an_illegal_choice(monkeypatch):
    def cheat(view, stock_left, moves, ctx):
        return Action.from_text("0>0")  # a card onto its own pile: never legal

    monkeypatch.setitem(policies._DETERMINISTIC, "greedy", cheat)
    with pytest.raises(RuntimeError, match="not legal here"):
        play_scalar(DECKS[0], "standard", "greedy", seed=0, index=0)


def test_scalar_policies_never_read_the_stock_order():
    rng = np.random.default_rng(5)
    for policy in ("random", "greedy", "aces", "human", "lookahead:depth=2"):
        for i, deck in enumerate(DECKS[:12]):
            line = play_scalar(deck, "standard", policy, seed=9, index=i).line.split()
            k = int(rng.integers(0, len(line)))
            dealt = 4 + 4 * line[:k].count("d")
            other = deck.copy()
            other[dealt:] = rng.permutation(other[dealt:])
            line2 = play_scalar(other, "standard", policy, seed=9, index=i).line.split()
            assert line2[: k + 1] == line[: k + 1], (policy, i, k)
