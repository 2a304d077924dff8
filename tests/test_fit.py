"""The fit of the value model (engine_rs_free.fit): seed-reproducible, and the look-ahead feature wired in."""

from __future__ import annotations

import numpy as np
import pytest

from engine_rs_free.errors import InputRangeError
from engine_rs_free.fit import fit, line_states


def _small(**kw):
    return fit("standard", games=60, tuples=4, seed=5, explore=0.3, name="t", look8=4, log=lambda s: None, **kw)


def test_fit_with_the_look_ahead_feature_is_seed_reproducible():
    a = _small(look12=4, n_features=31)
    b = _small(look12=4, n_features=31)
    for x, y in zip(a.arrays, b.arrays):
        assert np.array_equal(x, y)
    assert a.look12 == 4 and a.look8 == 4
    # stage 3 reads the feature (it varies over the states), the other stages see it as a constant 0
    assert np.abs(a.W1[3, 30]).sum() > 0 and a.mu[3, 30] > 0
    assert a.mu[2, 30] == 0 and a.mu[4, 30] == 0
    plain = _small()
    assert plain.W1.shape[1] == 30 and not np.array_equal(plain.W1[3], a.W1[3, :30])


def test_fit_with_a_telescoping_stage_3_fits_no_network_there():
    a = _small(look12=4, n_features=31, tele12=True)
    b = _small(look12=4, n_features=31, tele12=True)
    for x, y in zip(a.arrays, b.arrays):
        assert np.array_equal(x, y)
    assert a.tele12 and a.key(1, 2)[6] == 1 and _small(look12=4, n_features=31).key(1, 2)[6] == 0
    assert not a.W1[3].any() and a.W1[4].any()  # Q̂_3 is the feature itself; stage 4 is fitted to that W


def test_fit_names_what_the_look_ahead_feature_needs():
    with pytest.raises(InputRangeError, match="--features 31"):
        _small(look12=4)
    with pytest.raises(InputRangeError, match="--tele12 makes"):
        _small(tele12=True)
    with pytest.raises(InputRangeError, match="--lines -1 is negative"):
        _small(lines=-1)
    with pytest.raises(InputRangeError, match="--tuples 8"):
        fit("standard", games=10, tuples=4, seed=5, explore=0.3, look12=8, n_features=31, log=lambda s: None)


def test_an_ensemble_is_the_mean_of_its_members_log_odds_and_the_first_ones_stage_2():
    from engine_rs_free.fit import ensemble
    from engine_rs_free.value import _network, load_model

    members = [load_model("w4"), load_model("w3")]
    model = ensemble(members, "e")
    assert (model.look8, model.look12) == (32, 32) and model.W1.shape == (13, 31, 64)
    rng = np.random.default_rng(7)
    for _ in range(300):
        fx = np.zeros(64)
        fx[:31] = rng.normal(size=31)
        k = int(rng.integers(2, 13))
        q = [_network(k, fx, *m.arrays) for m in members]  # each member on its own scaling and features
        want = q[0] if k == 2 else 1.0 / (1.0 + np.exp(-np.mean([np.log(p / (1.0 - p)) for p in q])))
        assert _network(k, fx, *model.arrays) == pytest.approx(want, rel=1e-9, abs=1e-12)


def test_an_ensemble_refuses_models_with_other_look_aheads():
    from engine_rs_free.fit import ensemble
    from engine_rs_free.value import load_model

    with pytest.raises(InputRangeError, match="must share look8"):
        ensemble([load_model("w4"), load_model("w1")], "e")


def test_a_telescoping_model_round_trips_and_stays_out_of_ensembles(tmp_path):
    from engine_rs_free.fit import ensemble
    from engine_rs_free.value import Model, load_model

    w4 = load_model("w4")
    tele = Model("t9", *w4.arrays, look8=32, look12=32, tele12=True)
    tele.save(tmp_path / "t9.npz")
    back = Model.load(tmp_path / "t9.npz", "t9")
    assert back.tele12 and not w4.tele12 and (back.look8, back.look12) == (32, 32)
    with pytest.raises(InputRangeError, match=r"telescoping model \(t9\)"):
        ensemble([w4, back], "e")


def test_the_ensemble_command_writes_the_model_or_names_the_bad_member(tmp_path, capsys):
    from engine_rs_free.fit import main
    from engine_rs_free.value import Model

    out = tmp_path / "e.npz"
    assert main(["--name", "e", "--ensemble", "w4,w3", "--out", str(out)]) == 0
    model = Model.load(out, "e")
    assert model.meta.endswith("--ensemble w4,w3") and model.W1.shape == (13, 31, 64)
    assert main(["--name", "e", "--ensemble", "w4,nope", "--out", str(tmp_path / "f.npz")]) == 2
    assert "no value model 'nope'" in capsys.readouterr().err and not (tmp_path / "f.npz").exists()


def test_line_states_are_the_positions_the_solvers_won_lines_deal_from():
    from engine_rs_free.deals import deal_batch
    from engine_rs_free.game import Action, apply, new_game
    from engine_rs_free.solver import solve_batch

    sp, sh, sund = line_states("standard", 5, 200)
    decks = deal_batch(5, 2 * 10**9, 200)
    res = solve_batch(decks, "standard+sensible+leftmost", want_lines=True)
    won = [(d, ln) for d, w, ln in zip(decks, res.won, res.lines) if w]
    assert len(won) == len(sund) > 20
    for g, (deck, line) in enumerate(won):
        deck = [int(c) for c in deck]
        state = new_game(deck, "standard")
        d = 0
        for tok in line.split():
            if Action.from_text(tok).kind == "d":  # the position about to deal d: before this token
                assert sund[g, d] == sum(1 << c for c in deck[4 + 4 * d:]), (g, d)  # the undealt cards
                piles = [tuple(int(c) for c in sp[g, d, p, :sh[g, d, p]]) for p in range(4)]
                assert piles == [tuple(p) for p in state.piles], (g, d)
                d += 1
            state = apply(state, tok, "standard")
        assert d == 12 and state.won


def test_a_fit_with_line_states_learns_from_both_kinds():
    a = _small(lines=100)
    b = _small(lines=100)
    for x, y in zip(a.arrays, b.arrays):
        assert np.array_equal(x, y)
    plain = _small()
    assert not np.array_equal(plain.W1[2], a.W1[2])


def test_the_fit_command_names_a_bad_argument_and_writes_nothing(tmp_path, capsys):
    from engine_rs_free.fit import main

    out = tmp_path / "x.npz"
    assert main(["--name", "x", "--games", "10", "--lines", "-1", "--out", str(out)]) == 2
    assert "--lines -1 is negative" in capsys.readouterr().err and not out.exists()
