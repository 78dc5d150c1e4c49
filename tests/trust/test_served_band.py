"""The AUC band a report gives for what an LLM is served: the latent posterior's for the latent ranking,
the fallback's band on held-out subtasks when it is applied to prompts of an unseen task."""
from __future__ import annotations

import pytest

from assessors.errors import ConfigError
from assessors.trust.posterior_policy import FALLBACKS, PosteriorTrustPolicy
from assessors.trust.served_band import check_bands, served_auc_band

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
