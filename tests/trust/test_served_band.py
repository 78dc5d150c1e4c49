"""The AUC and accuracy bands a report gives for what an LLM is served: the latent posterior's for the latent
ranking, the fallback's bands on held-out subtasks when it is applied to prompts of an unseen task."""
from __future__ import annotations

import pytest

from assessors.errors import ConfigError
from assessors.trust.posterior_policy import FALLBACKS, PosteriorTrustPolicy
from assessors.trust.fallbacks import check_bands, served_accuracy_band, served_auc_band

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
    assert served_auc_band((0.6, 0.8), flags, predictor, "population", BANDS) == expected


def test_the_fallbacks_band_reaches_down_to_chance():
    band = served_auc_band((0.3, 0.8), OOD, "population", "population", BANDS, chance_low=0.47)
    assert band == ([0.47, 0.71], "held-out subtasks")
    assert served_auc_band((0.3, 0.8), OOD, "population", "population", BANDS, chance_low=0.6)[0] == [0.52, 0.71]
    assert served_auc_band((0.3, 0.8), OOD, "population", "population", BANDS, chance_low=float("nan"))[0] == [0.52, 0.71]


def test_the_chosen_fallback_without_a_stored_band_keeps_the_posterior_one():
    assert served_auc_band((0.4, 0.8), OOD, "releveled", "releveled", None) == ([0.4, 0.8], "posterior")
    assert served_auc_band((0.4, 0.8), OOD, "reference_only", "reference_only", {}) == (None, None)


def test_bad_bands_are_a_clear_error():
    assert check_bands(None, FALLBACKS) is None and check_bands({}, FALLBACKS) is None
    assert check_bands({"population": (0.5, 0.6)}, FALLBACKS) == {"population": [0.5, 0.6]}
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
    acc, band, source = served_accuracy_band(0.4, (0.3, 0.5), flags, predictor, "population", ERRORS, mean)
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
        acc, band, source = served_accuracy_band(0.4, (0.3, 0.5), ["accuracy_above_training"], predictor, "population",
                                                 None, 0.55, answered=(30, 50, 0.60))
        assert (acc, source) == (0.55, "answered level")
        assert band == pytest.approx([0.4838 - 0.05, 0.7060], abs=1e-3)
        higher = served_accuracy_band(0.4, (0.3, 0.5), [], predictor, "population", None, 0.65, answered=(30, 50, 0.6))
        assert higher[1] == pytest.approx([0.4838, 0.7060 + 0.05], abs=1e-3)
    # prompts out of distribution with the fold band win over the answered level
    assert served_accuracy_band(0.4, (0.3, 0.5), OOD, "population", "population", ERRORS, 0.5,
                                answered=(30, 50, 0.6))[2] == "held-out subtasks"
    assert served_accuracy_band(0.4, (0.3, 0.5), [], "releveled", "population", None, 0.5, answered=(0, 0, 0.5)) == (
        0.5, None, None)


def test_the_answered_level_band_covers_the_target_accuracy_at_its_level():
    """By simulation: LLMs whose success logit is a known prompt difficulty plus their own level, served by
    the population fallback re-levelled on 100 answers. The 90% band of the accuracy on 2,000 other
    prompts holds it for about 90% of 400 LLMs."""
    import numpy as np

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
        _, band, _ = served_accuracy_band(None, None, [], "population", "population", None,
                                          f(X[target]).mean(), answered=(s[ans].sum(), 100, f(X[ans]).mean()))
        inside.append(band[0] <= s[target].mean() <= band[1])
    assert 0.85 <= np.mean(inside) <= 0.99, np.mean(inside)
