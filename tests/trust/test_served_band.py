"""The AUC and accuracy bands a report gives for what an LLM is served (:meth:`PosteriorTrustPolicy.served`): the
latent posterior's for the latent ranking, the fallback's bands on held-out subtasks when it is applied to prompts
of an unseen task."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from assessors.errors import ConfigError
from assessors.trust.posterior_policy import PosteriorTrustPolicy
from assessors.trust.fallbacks import check_bands


class Served:
    """A fallback named ``name`` whose prediction is a prompt's only feature."""

    def __init__(self, name):
        self.name = name

    def __call__(self, X):
        return np.asarray(X, dtype=np.float64)[:, 0]


def served(predictor, flags, mean=0.5, answered=(0, 0, 0.5), auc_band=(0.6, 0.8), chance_low=None,
           ood_fallback="population", **bands):
    """``PosteriorTrustPolicy(...).served`` of a report with accuracy 0.4 in [0.3, 0.5] and the given AUC band, by a
    fallback predicting ``mean`` on a target prompt (None for ``latent``) and ``answered[2]`` on ``answered[1]``
    answered ones, ``answered[0]`` of them right."""
    rep = SimpleNamespace(flags=list(flags), auc_band=auc_band, auc_chance_low=chance_low, expected_accuracy=0.4,
                          accuracy_band=(0.3, 0.5))
    k, n, m = answered
    y = np.r_[np.ones(int(k)), np.zeros(int(n - k))]
    policy = PosteriorTrustPolicy(ood_fallback=ood_fallback, **bands)
    return policy.served(rep, None if predictor == "latent" else Served(predictor), np.full((1, 1), mean),
                         np.full((int(n), 1), m), y)


def auc_of(out):
    return out["auc_band"], out["auc_band_from"]


def accuracy_of(out):
    return out["expected_accuracy"], out["accuracy_band"], out["accuracy_band_from"]


OOD = ["prompts_out_of_distribution"]
BANDS = {"population": [0.52, 0.71], "releveled": [0.45, 0.74]}


@pytest.mark.parametrize("predictor, flags, expected", [
    ("latent", [], ([0.6, 0.8], "posterior")),
    ("releveled", ["accuracy_above_training"], ([0.6, 0.8], "posterior")),  # the same ranking as the latent
    ("population", OOD, ([0.52, 0.71], "held-out subtasks")),
    ("reference_only", OOD, (None, None)),  # not the chosen OOD fallback: no band is known for it
    ("releveled", OOD, ([0.6, 0.8], "posterior")),  # the chosen one is population
])
def test_the_band_follows_the_predictor_served(predictor, flags, expected):
    assert auc_of(served(predictor, flags, ood_auc_bands=BANDS)) == expected


def test_the_fallbacks_band_reaches_down_to_chance():
    band = auc_of(served("population", OOD, auc_band=(0.3, 0.8), chance_low=0.47, ood_auc_bands=BANDS))
    assert band == ([0.47, 0.71], "held-out subtasks")
    for chance in (0.6, float("nan")):
        out = served("population", OOD, auc_band=(0.3, 0.8), chance_low=chance, ood_auc_bands=BANDS)
        assert out["auc_band"] == [0.52, 0.71]


def test_the_chosen_fallback_without_a_stored_band_keeps_the_posterior_one():
    assert auc_of(served("releveled", OOD, auc_band=(0.4, 0.8), ood_fallback="releveled")) == ([0.4, 0.8], "posterior")
    out = served("reference_only", OOD, auc_band=(0.4, 0.8), ood_fallback="reference_only", ood_auc_bands={})
    assert auc_of(out) == (None, None)


def test_bad_bands_are_a_clear_error():
    assert check_bands(None) is None and check_bands({}) is None
    assert check_bands({"population": (0.5, 0.6)}) == {"population": [0.5, 0.6]}
    for bad in ({"magic": [0.5, 0.6]}, {"population": [0.7, 0.6]}, {"population": [-0.1, 0.6]}):
        with pytest.raises(ConfigError, match="ood_auc_bands"):
            PosteriorTrustPolicy(ood_auc_bands=bad)


ERRORS = {"population": [-0.12, 0.05]}


@pytest.mark.parametrize("predictor, flags, mean, expected", [
    ("latent", [], 0.9, (0.4, [0.3, 0.5], "posterior")),  # the report's own expected accuracy and band
    ("population", OOD, 0.6, (0.6, [0.3, 0.65], "held-out subtasks")),  # its mean plus the error band ...
    ("population", OOD, 0.2, (0.2, [0.08, 0.5], "held-out subtasks")),  # ... widened to the posterior band
    ("population", OOD, 0.97, (0.97, [0.3, 1.0], "held-out subtasks")),  # clipped to [0, 1]
    ("reference_only", OOD, 0.6, (0.6, None, None)),  # no error band is known for it
])
def test_the_accuracy_band_follows_the_predictor_served(predictor, flags, mean, expected):
    acc, band, source = accuracy_of(served(predictor, flags, mean, ood_accuracy_bands=ERRORS))
    assert (acc, source) == expected[::2] and band == (None if expected[1] is None else pytest.approx(expected[1]))


def test_accuracy_error_bands_may_be_negative_but_not_reversed():
    assert PosteriorTrustPolicy(ood_accuracy_bands=ERRORS).ood_accuracy_bands == ERRORS
    for bad in ({"population": [0.1, -0.1]}, {"population": [-1.5, 0.1]}, {"magic": [-0.1, 0.1]}):
        with pytest.raises(ConfigError, match="ood_accuracy_bands"):
            PosteriorTrustPolicy(ood_accuracy_bands=bad)


def test_a_fallback_at_the_answered_level_gets_the_wilson_band_of_its_answers_moved_to_the_target():
    """30 of 50 answered: the Wilson 90% interval [0.483, 0.707]; the fallback predicts 0.05 lower on the
    target prompts than on the answered ones, so the band reaches 0.05 lower."""
    for predictor in ("releveled", "reference_only", "population"):
        acc, band, source = accuracy_of(served(predictor, ["accuracy_above_training"], 0.55, (30, 50, 0.60)))
        assert (acc, source) == (pytest.approx(0.55), "answered level")
        assert band == pytest.approx([0.4838 - 0.05, 0.7060], abs=1e-3)
        higher = served(predictor, [], 0.65, (30, 50, 0.6))["accuracy_band"]
        assert higher == pytest.approx([0.4838, 0.7060 + 0.05], abs=1e-3)
    # prompts out of distribution with the fold band win over the answered level
    out = served("population", OOD, 0.5, (30, 50, 0.6), ood_accuracy_bands=ERRORS)
    assert out["accuracy_band_from"] == "held-out subtasks"
    assert accuracy_of(served("releveled", [], 0.5, (0, 0, 0.5))) == (0.5, None, None)


def test_the_answered_level_band_covers_the_target_accuracy_at_its_level():
    """By simulation: LLMs whose success logit is a known prompt difficulty plus their own level, served by
    the population fallback re-levelled on 100 answers. The 90% band of the accuracy on 2,000 other
    prompts holds it for about 90% of 400 LLMs."""
    from assessors.irt_math import sigmoid
    from assessors.trust.fallbacks import PopulationPredictor

    class Difficulty:  # a population model that knows the difficulty exactly
        def logit(self, X):
            return np.asarray(X, dtype=np.float64)[:, 0]

    rng = np.random.default_rng(0)
    inside = []
    for _ in range(400):
        X = rng.normal(0, 1.5, (2100, 1)).astype(np.float32)
        s = (rng.random(2100) < sigmoid(X[:, 0] + rng.normal(0, 1.5))).astype(float)
        ans, target = np.arange(100), np.arange(100, 2100)
        f = PopulationPredictor(Difficulty(), X[ans], s[ans])
        band = PosteriorTrustPolicy().served(SimpleNamespace(flags=[], auc_band=None, auc_chance_low=None,
                                                             expected_accuracy=None, accuracy_band=(0.0, 1.0)),
                                             f, X[target], X[ans], s[ans])["accuracy_band"]
        inside.append(band[0] <= s[target].mean() <= band[1])
    assert 0.85 <= np.mean(inside) <= 0.99, np.mean(inside)
