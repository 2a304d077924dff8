"""The scalar reference game: hand-built positions, properties over random play."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine_rs_free.cards import parse_card, parse_deck
from engine_rs_free.deals import deal
from engine_rs_free.game import (
    DEAL,
    Action,
    ActionParseError,
    IllegalActionError,
    ReplayError,
    State,
    apply,
    all_discard_orders,
    format_line,
    format_position,
    is_over,
    legal_actions,
    new_game,
    parse_line,
    parse_position,
    picture,
    replay,
    replay_states,
    resolve_discards,
    why_illegal,
)
from engine_rs_free.rules import relabel_reverse_to_standard, rules_by_name

VARIANTS = ["standard", "strict", "easy", "reverse", "standard+optional", "easy+optional",
            "standard+sensible+leftmost+must_fill", "easy+sensible", "strict+must_fill"]


def names(actions):
    return [str(a) for a in actions]


# ---- actions -------------------------------------------------------------

@pytest.mark.parametrize("text", ["d", "2>0", "2:1>0", "x2", "0>3", "3:12>1"])
def test_action_text_round_trip(text):
    a = Action.from_text(text)
    assert str(a) == text
    assert eval(repr(a)) == a


@pytest.mark.parametrize("text", ["", "D2", "4>0", "2>", "x4", "2:-1>0", "move"])
def test_bad_action_text(text):
    with pytest.raises(ActionParseError, match="unknown action"):
        Action.from_text(text)


def test_illegal_action_is_not_a_parse_error():
    assert not issubclass(ActionParseError, IllegalActionError)
    assert not issubclass(IllegalActionError, ActionParseError)


# ---- hand-built positions: exact legal actions per variant ----------------

POS = "AS KS | 7H | - | 2C 9D"
STOCK = "3C 4C 5C 6C"


@pytest.mark.parametrize(
    "variant,expected",
    [
        ("standard", ["d", "0>2", "1>2", "3>2"]),
        ("reverse", ["d", "0>2", "1>2", "3>2"]),
        ("strict", ["d"]),
        ("easy", ["d", "0>2", "0:1>2", "1>2", "3>2", "3:1>2"]),
        ("standard+sensible", ["d", "0>2", "3>2"]),
        ("standard+must_fill", ["0>2", "1>2", "3>2"]),
        ("standard+optional", ["d", "0>2", "1>2", "3>2"]),
    ],
)
def test_legal_actions_one_empty_pile(variant, expected):
    s = parse_position(POS, STOCK)
    assert names(legal_actions(s, variant)) == expected


def test_strict_moves_only_aces():
    s = parse_position("KS AS | 7H | - | -", STOCK)
    assert names(legal_actions(s, "strict")) == ["d", "0>2", "0>3"]
    assert names(legal_actions(s, "strict+leftmost")) == ["d", "0>2"]
    # In strict the top-rank card is the Ace even when it is the only card of its pile.
    s = parse_position("AS | 7H | - | -", STOCK)
    assert names(legal_actions(s, "strict")) == ["d", "0>2", "0>3"]
    assert names(legal_actions(s, "strict+sensible")) == ["d"]


def test_leftmost_and_must_fill_together():
    s = parse_position("AS KS | - | - | 2C 9D", STOCK)
    assert names(legal_actions(s, "standard")) == ["d", "0>1", "0>2", "3>1", "3>2"]
    assert names(legal_actions(s, "standard+leftmost+must_fill")) == ["0>1", "3>1"]


def test_must_fill_is_blocked_only_by_a_card_of_a_pile_of_two_or_more():
    # RULES.md: a lone card never blocks a deal (read literally, the older wording let it do so forever)
    lone = parse_position("AS | - | - | 9D", STOCK)
    assert names(legal_actions(lone, "standard+must_fill")) == ["d", "0>1", "0>2", "3>1", "3>2"]
    assert names(legal_actions(lone, "easy+must_fill")) == ["d", "0>1", "0>2", "3>1", "3>2"]
    stacked = parse_position("AS | - | - | 9D 2C", STOCK)
    assert names(legal_actions(stacked, "standard+must_fill")) == ["0>1", "0>2", "3>1", "3>2"]
    # in strict only an Ace moves: an Ace on a pile of two blocks the deal, a lone Ace does not
    assert names(legal_actions(parse_position("9D AS | - | 7H | 8C", STOCK), "strict+must_fill")) == ["0>1"]
    assert names(legal_actions(parse_position("AS | - | 7H | 8C 9C", STOCK), "strict+must_fill")) == ["d", "0>1"]
    # in easy a card below the top of a pile of two blocks it too
    assert names(legal_actions(parse_position("AS | - | 7H | KC 9C", STOCK), "easy+sensible+must_fill")) == [
        "3>1", "3:1>1"]
    assert "must_fill is in force" in why_illegal(stacked, Action.from_text("d"), "standard+must_fill")
    assert why_illegal(lone, Action.from_text("d"), "standard+must_fill") is None


def test_must_fill_allows_deal_when_no_move_is_possible():
    s = parse_position("AS | - | - | 9D", STOCK)
    assert names(legal_actions(s, "standard+sensible+must_fill")) == ["d"]


def test_optional_discards_are_choices():
    s = parse_position("AS KS | 7H | 8H | 2C 9D", STOCK)
    assert names(legal_actions(s, "standard+optional")) == ["d", "x1"]
    forced = resolve_discards(s, rules_by_name("standard"))
    assert format_position(forced) == "AS KS | - | 8H | 2C 9D"
    after = apply(s, "x1", "standard+optional")
    assert format_position(after) == "AS KS | - | 8H | 2C 9D"
    assert after.score == s.score + 1


def test_reverse_ranks_ace_lowest():
    s = parse_position("AS | KS | 7H | 2H", STOCK)
    forced = resolve_discards(s, rules_by_name("reverse"))
    assert format_position(forced) == "- | KS | 7H | -"  # AS < KS and 2H < 7H when Aces are low
    forced = resolve_discards(s, rules_by_name("standard"))
    assert format_position(forced) == "AS | - | 7H | -"


def test_chain_of_discards_exposes_cards():
    s = parse_position("5H AH | 9H | QD KH | 2D", STOCK)
    after = resolve_discards(s, rules_by_name("standard"))
    # AH kills 9H and KH; KH gone exposes QD, which kills 2D.
    assert format_position(after) == "5H AH | - | QD | -"


def test_deal_exact():
    s = parse_position("AS | - | - | 9D", "2C 3H 4S KD 5C 6C 7C 8C")
    first = apply(s, DEAL, "standard")
    # Every pile gets a card, the empty ones included; no two tops share a suit.
    assert format_position(first) == "AS 2C | 3H | 4S | 9D KD"
    assert first.stock == tuple(parse_card(c) for c in "5C 6C 7C 8C".split())
    second = apply(first, DEAL, "standard")
    # 5C 6C 7C die to 8C, then 2C (exposed) to 8C, then 4S to the exposed AS.
    assert format_position(second) == "AS | 3H | - | 9D KD 8C"
    assert second.score == first.score + 5 and second.stock == ()


def test_easy_depth_move_keeps_order():
    s = parse_position("2D 3C 4H | - | 9S | KC", "5S 6S 7S 8S")
    after = apply(s, "0:2>1", "easy")
    assert format_position(after) == "3C 4H | 2D | 9S | KC"
    after = apply(s, "0:1>1", "easy")  # 3C moves and dies to KC; 2D 4H stay in order
    assert format_position(after) == "2D 4H | - | 9S | KC"


def test_illegal_actions_say_why():
    s = parse_position(POS, STOCK)
    cases = {
        "0>1": "pile 1 is not empty",
        "0:1>2": "depth moves need 'easy'",
        "x1": "discards are forced",
        "2>2": "cannot move onto its own pile",
    }
    for text, why in cases.items():
        with pytest.raises(IllegalActionError, match=why):
            apply(s, text, "standard")
    with pytest.raises(IllegalActionError, match="only an Ace"):
        apply(s, "3>2", "strict")
    with pytest.raises(IllegalActionError, match="sensible is in force"):
        apply(s, "1>2", "standard+sensible")
    with pytest.raises(IllegalActionError, match="stock is empty"):
        apply(parse_position(POS), "d", "standard")


def test_replay_error_names_position_action_state_and_reason():
    deck = deal(0, 0)
    with pytest.raises(ReplayError) as err:
        replay(deck, "d d 3>1 d", "standard")
    e = err.value
    assert e.position == 3 and e.action == "3>1"
    assert "action 3 '3>1'" in str(e) and "state before it" in str(e) and "not empty" in str(e)
    with pytest.raises(ReplayError, match="action 2 'zz'.*unknown action"):
        replay(deck, "d zz", "standard")


def test_position_text_round_trip():
    s = parse_position(POS, STOCK)
    assert format_position(s) == POS
    assert parse_position(format_position(s), STOCK) == s
    assert picture(s).splitlines()[2] == "2: -"


def test_new_game_is_four_cards_and_closure():
    deck = parse_deck("2C 3C 4H AC " + " ".join(c for c in
        "4C 5C 6C 7C 8C 9C TC JC QC KC 2D 3D 4D 5D 6D 7D 8D 9D TD JD QD KD AD 2H 3H 5H 6H 7H 8H 9H TH JH QH KH AH "
        "2S 3S 4S 5S 6S 7S 8S 9S TS JS QS KS AS".split()))
    s = new_game(deck, "standard")
    assert format_position(s) == "- | - | 4H | AC"
    assert s.score == 2 and len(s.stock) == 48


# ---- properties over random play ------------------------------------------

def random_game(deck, variant, rng, stop_prob=0.1, max_actions=300):
    """Play random legal actions; returns the action list and every state."""
    rules = rules_by_name(variant)
    state = new_game(deck, rules)
    actions, states = [], [state]
    while len(actions) < max_actions:
        acts = legal_actions(state, rules)
        if not acts or (not state.stock and rng.random() < stop_prob):
            break
        a = acts[rng.integers(len(acts))]
        state = apply(state, a, rules)
        actions.append(a)
        states.append(state)
    return actions, states


def conserved(state: State) -> bool:
    cards = [c for p in state.piles for c in p] + list(state.stock) + list(state.discarded)
    return sorted(cards) == list(range(52))


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32), st.sampled_from(VARIANTS))
def test_random_play_conserves_cards_and_replays(seed, variant):
    rng = np.random.default_rng(seed)
    deck = rng.permutation(52).astype(np.uint8)
    actions, states = random_game(deck, variant, rng)
    for s in states:
        assert conserved(s)
        assert 0 <= s.score <= 48
        assert all(len(p) <= 52 for p in s.piles)
    line = format_line(actions)
    assert parse_line(line) == actions
    assert replay(deck, line, variant) == states[-1]
    assert replay_states(deck, line, variant) == states
    scores = [s.score for s in states]
    assert scores == sorted(scores)  # discards never come back


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32), st.sampled_from(["standard", "strict", "easy", "reverse"]))
def test_discard_closure_is_order_independent(seed, variant):
    rng = np.random.default_rng(seed)
    rules = rules_by_name(variant)
    deck = rng.permutation(52).astype(np.uint8)
    _, states = random_game(deck, variant + "+optional", rng)
    # Any position reached under optional discards, closed under forced discards
    # in each of the 24 pile orders, gives one and the same state.
    # The default (a round at a time, game.forced_discards) gives that state too.
    for s in states[:: max(1, len(states) // 5)]:
        results = {resolve_discards(s, rules, order) for order in [None, *all_discard_orders()]}
        assert len(results) == 1


def literal_apply(state, action, rules):
    """RULES.md read literally: make the action on lists, then discard one card at a time."""
    piles = [list(p) for p in state.piles]
    stock = list(state.stock)
    discarded = set(state.discarded)
    if action.kind == "d":
        for pile in piles:
            pile.append(stock.pop(0))
    elif action.kind == "m":
        card = piles[action.src].pop(len(piles[action.src]) - 1 - action.depth)
        piles[action.dst].append(card)
    else:
        discarded.add(piles[action.src].pop())
    moved = State(tuple(tuple(p) for p in piles), tuple(stock), frozenset(discarded))
    return resolve_discards(moved, rules, order=(0, 1, 2, 3))


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32), st.sampled_from(VARIANTS))
def test_apply_equals_the_literal_rule(seed, variant):
    rng = np.random.default_rng(seed)
    rules = rules_by_name(variant)
    _, states = random_game(rng.permutation(52).astype(np.uint8), variant, rng)
    for s in states:
        for a in legal_actions(s, rules):
            assert apply(s, a, rules) == literal_apply(s, a, rules), (format_position(s), str(a))


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32), st.sampled_from(["", "+optional", "+sensible+leftmost"]))
def test_reverse_equals_standard_on_relabelled_deck(seed, opts):
    rng = np.random.default_rng(seed)
    deck = rng.permutation(52).astype(np.uint8)
    twin = relabel_reverse_to_standard(deck)
    actions, states = random_game(deck, "reverse" + opts, rng)
    twin_state = new_game(twin, "standard" + opts)
    for a, s in zip([None] + actions, states):
        if a is not None:
            assert a in legal_actions(twin_state, "standard" + opts)
            twin_state = apply(twin_state, a, "standard" + opts)
        assert names(legal_actions(s, "reverse" + opts)) == names(legal_actions(twin_state, "standard" + opts))
        assert s.score == twin_state.score
        assert [len(p) for p in s.piles] == [len(p) for p in twin_state.piles]


def test_is_over_when_stock_empty_and_no_move():
    s = parse_position("AS | AH | AD | AC")
    assert is_over(s, "standard") and s.won
    s = parse_position("AS | - | AD | AC")
    assert not is_over(s, "standard")  # the lone Ace may still move
    assert is_over(s, "standard+sensible")
