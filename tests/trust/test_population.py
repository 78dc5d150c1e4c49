"""The population fallback: the training LLMs' success rate learned from prompt features recovers a
simulated difficulty on new prompts, and one LLM's offset moves the level without changing the ranking."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr

from assessors.errors import ConfigError, DataError
from assessors.irt_math import sigmoid
from assessors.metrics import masked_auc
from assessors.trust.fallbacks import PopulationPredictor
from assessors.trust.population import PopulationDifficulty
from assessors.trust.prompt_ood import PromptOOD


def _world(rng, n_prompts, n_llms=30, d=8):
    """Features (n, d), true difficulty logit (n,), abilities (n_llms,), success (n_llms, n) with NaN."""
    X = rng.standard_normal((n_prompts, d)).astype(np.float32)
    b = 1.5 * X[:, 0] - np.abs(X[:, 1])  # nonlinear: trees must find it
    theta = rng.normal(0.0, 1.0, n_llms)
    S = (rng.random((n_llms, n_prompts)) < sigmoid(theta[:, None] - b[None, :])).astype(np.float64)
    S[rng.random(S.shape) < 0.1] = np.nan  # not every LLM answered every prompt
    return X, b, theta, S


def test_the_learned_rate_ranks_new_prompts_by_their_true_difficulty():
    rng = np.random.default_rng(0)
    X, _, _, S = _world(rng, 1500)
    pop = PopulationDifficulty(n_jobs=1).fit(X, S)
    X_new, b_new, _, _ = _world(rng, 500)
    rho = spearmanr(pop.logit(X_new), -b_new).statistic
    assert rho > 0.9, rho
    assert pop.n_prompts_ == 1500


def test_one_llms_offset_fits_its_level_and_keeps_the_population_ranking():
    rng = np.random.default_rng(1)
    X, _, _, S = _world(rng, 1500)
    pop = PopulationDifficulty().fit(X, S)
    X_new, b_new, _, _ = _world(rng, 2000)
    strong = (rng.random(2000) < sigmoid(2.5 - b_new)).astype(float)  # stronger than every training LLM
    pred = PopulationPredictor(pop, X_new[:1000], strong[:1000])
    p = pred(X_new[1000:])
    assert p.mean() == pytest.approx(strong[1000:].mean(), abs=0.05)
    assert masked_auc(strong[1000:], p) == pytest.approx(masked_auc(strong[1000:], sigmoid(pop.logit(X_new[1000:]))), abs=1e-9)
    assert pred.name == "population"


def test_bad_input_is_a_clear_error():
    with pytest.raises(DataError, match="S must be"):
        PopulationDifficulty().fit(np.ones((5, 3)), np.ones((2, 4)))
    with pytest.raises(DataError, match="answered training prompt"):
        PopulationDifficulty().fit(np.ones((3, 2)), np.full((2, 3), np.nan))
    with pytest.raises(DataError, match="at least one answered"):
        PopulationPredictor(None, np.ones((2, 3)), [np.nan, np.nan])


def test_prompt_ood_fits_the_population_only_given_the_training_success():
    from assessors.trust.posterior_policy import PosteriorTrustPolicy

    rng = np.random.default_rng(2)
    X, _, _, S = _world(rng, 300)
    with_pop = PromptOOD(population=PopulationDifficulty()).fit(X, X[:50], S)
    assert with_pop.population_.n_prompts_ == 300 and with_pop.summary()["population"] is True
    without = PromptOOD(population=PopulationDifficulty()).fit(X, X[:50])
    assert without.population_ is None and without.summary()["population"] is False
    assert PosteriorTrustPolicy(ood_fallback="population", prompt_ood=with_pop).ood_fallback == "population"
    with pytest.raises(ConfigError, match="ood_fallback=reference_only"):
        PosteriorTrustPolicy(ood_fallback="population", prompt_ood=without)
    # no prompt-side signal: the OOD fallback never applies, so a stored population choice is no error
    assert PosteriorTrustPolicy(ood_fallback="population", prompt_ood=None).prompt_ood is None
