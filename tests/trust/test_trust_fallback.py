"""Fallback blend weight chosen on constructed validation LLMs."""
import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

from assessors.trust.fallback import FallbackPolicy


def _case(rng, k, m, generic_good):
    S = (rng.random((k, m)) < 0.5).astype(float)
    informative = np.clip(S * 0.6 + rng.normal(0.2, 0.2, (k, m)), 0, 1)
    noise = rng.random((k, m))
    return (informative, noise, S) if generic_good else (noise, informative, S)


def test_weight_follows_which_assessor_is_informative_on_flagged_llms():
    rng = np.random.default_rng(0)
    Pg, Pr, S = _case(rng, 6, 200, generic_good=False)
    flags = [["range_above"]] * 4 + [[]] * 2
    pol = FallbackPolicy().fit(Pg, Pr, S, flags)
    assert pol.weight_ == 1.0 and pol.n_triggered_ == 4
    assert pol.scores_.is_monotonic_increasing
    Pg, Pr, S = _case(rng, 6, 200, generic_good=True)
    assert FallbackPolicy().fit(Pg, Pr, S, flags).weight_ == 0.0


def test_blend_only_on_triggered_llms_and_default_weight():
    rng = np.random.default_rng(1)
    Pg, Pr, S = _case(rng, 3, 50, generic_good=False)
    pol = FallbackPolicy(triggers=["low_similarity"], default_weight=0.25, min_triggered=2)
    with pytest.raises(NotFittedError):
        pol.weight_for(["low_similarity"])
    pol.fit(Pg, Pr, S, [["low_similarity"], [], ["range_above"]])
    assert pol.weight_ == 0.25 and "default" in pol.chosen_by_
    assert np.array_equal(pol.blend(Pg[1], Pr[1], []), Pg[1].astype(np.float32))
    assert np.allclose(pol.blend(Pg[0], Pr[0], ["low_similarity"]), 0.75 * Pg[0] + 0.25 * Pr[0])
