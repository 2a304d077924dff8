"""Rule sets: presets, names, options, relabelling."""

import numpy as np
import pytest

from engine_rs_free.cards import parse_card
from engine_rs_free.rules import (
    FILL_ACE,
    FILL_ANY,
    OPTIONS,
    PRESETS,
    Rules,
    UnknownRulesError,
    relabel_reverse_to_standard,
    rules_by_name,
    strength_table,
)


def test_presets():
    assert rules_by_name("strict").fill == FILL_ACE
    assert rules_by_name("easy").fill == FILL_ANY
    assert rules_by_name("reverse").ace_low
    assert rules_by_name("standard") == Rules()


@pytest.mark.parametrize("preset", PRESETS)
def test_every_name_round_trips(preset):
    import itertools

    for k in range(len(OPTIONS) + 1):
        for opts in itertools.combinations(OPTIONS, k):
            r = rules_by_name("+".join((preset, *reversed(opts))))
            assert rules_by_name(r.name) == r
            assert r.name == "+".join((preset, *opts))


def test_game_name_and_restrictions():
    r = rules_by_name("easy+optional+leftmost+sensible")
    assert r.game_name == "easy+optional"
    assert r.restrictions == ("sensible", "leftmost")
    assert r.without_restrictions() == rules_by_name("easy+optional")


@pytest.mark.parametrize("bad,fragment", [("klondike", "known variants: standard, strict, easy, reverse"),
                                          ("standard+fast", "unknown option 'fast'"),
                                          ("strict+optional+optional", "names an option twice")])
def test_unknown_names(bad, fragment):
    with pytest.raises(UnknownRulesError, match=fragment):
        rules_by_name(bad)


def test_strength_tables():
    std, rev = strength_table(rules_by_name("standard")), strength_table(rules_by_name("reverse"))
    assert std[parse_card("AS")] == 12 and std[parse_card("2S")] == 0
    assert rev[parse_card("KS")] == 12 and rev[parse_card("AS")] == 0 and rev[parse_card("2S")] == 1


def test_relabel_maps_reverse_ranks_onto_standard():
    deck = np.arange(52, dtype=np.uint8)
    twin = relabel_reverse_to_standard(deck)
    assert twin[parse_card("KH")] == parse_card("AH")
    assert twin[parse_card("AH")] == parse_card("2H")
    assert twin[parse_card("QC")] == parse_card("KC")
    assert sorted(twin.tolist()) == list(range(52))



@pytest.mark.parametrize("opts", ["sensible", "sensible+sensible", "leftmost+sensible", "Must_Fill+LEFTMOST",
                                  "sensible++leftmost", "", "sensible+", "fast", "optional",
                                  "sensible+leftmost+must_fill+sensible", " sensible + leftmost "])
def test_solver_restrictions_and_variant_names_give_one_answer(opts):
    """``solver:OPTS`` under a variant plays the rules ``VARIANT+OPTS`` names, or both are refused.

    (``optional`` is a variant option, not a restriction: the solver refuses it.)
    """
    from engine_rs_free.players import UnknownPlayerError, parse_player, solver_rules
    from pipeline.errors import UserError
    from pipeline.spec import load_spec

    for base in ("standard", "strict+optional"):
        try:
            want = rules_by_name(f"{base}+{opts}") if opts.strip() != "optional" else None
        except UnknownRulesError:
            want = None
        try:
            got = solver_rules(parse_player(f"solver:{opts}"), rules_by_name(base))
        except UnknownPlayerError:
            got = None
        assert got == want, (base, opts)
    if want is None:
        with pytest.raises(UserError, match="spec field 'policies'"):
            load_spec(None, policies=f"greedy,solver:{opts}")
