"""The fit of the value model (engine_rs_free.fit): seed-reproducible, and the look-ahead feature wired in."""

from __future__ import annotations

import numpy as np
import pytest

from engine_rs_free.errors import InputRangeError
from engine_rs_free.fit import fit


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


def test_fit_names_what_the_look_ahead_feature_needs():
    with pytest.raises(InputRangeError, match="--features 31"):
        _small(look12=4)
    with pytest.raises(InputRangeError, match="--tuples 8"):
        fit("standard", games=10, tuples=4, seed=5, explore=0.3, look12=8, n_features=31, log=lambda s: None)
