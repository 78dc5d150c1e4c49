"""The similarity signal: kappa on constructed cases with known answers, and its conformal p-value by
simulation on real leaderboard answers."""
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from assessors.trust.similarity import kappa, similarity, training_profile


def test_kappa_is_one_for_a_twin_zero_for_independent_and_matches_sklearn():
    rng = np.random.default_rng(0)
    a = (rng.random(5000) < 0.7).astype(float)
    assert kappa(a, a[None])[0] == pytest.approx(1.0)
    B = (rng.random((20, 5000)) < rng.uniform(0.2, 0.9, (20, 1))).astype(float)
    assert np.abs(kappa(a, B)).max() < 0.05  # high raw agreement for similar accuracies, yet kappa ~ 0
    b = np.where(rng.random(5000) < 0.8, a, 1 - a)
    b[:15] = np.nan  # not answered: dropped pairwise
    keep = ~np.isnan(b)
    assert kappa(a, b)[0] == pytest.approx(cohen_kappa_score(a[keep], b[keep]))
    z = np.zeros(50)
    assert np.isnan(kappa(z, z[None])[0]) and np.isnan(kappa(a[:5], a[None, :5])[0])  # constant; too little overlap


def test_pvalue_is_low_for_shuffled_answers_and_uniform_for_real_llms(data_dir):
    """Real BBH answers: a held-out LLM is as alike to the others as they are to each other (p-values spread
    over (0, 1]); the same answers shuffled over the prompts (same accuracy, no shared pattern) are not."""
    from assessors.data.loaders.open_llm_leaderboard_v2 import load_open_llm_leaderboard_v2

    res = load_open_llm_leaderboard_v2(root=data_dir, subtasks=["bbh_navigate", "bbh_web_of_lies"], download=False)
    rng = np.random.default_rng(0)
    S = res.success[:, rng.choice(res.success.shape[1], 150, replace=False)].astype(np.float64)
    S = S[(np.nanmean(S, 1) > 0.1) & (np.nanmean(S, 1) < 0.9)]
    order = rng.permutation(len(S))
    T, new = S[order[:60]], S[order[60:100]]
    prof = training_profile(T)
    real = np.array([similarity(y, T, prof)[1] for y in new])
    shuffled = np.array([similarity(rng.permutation(y), T, prof)[1] for y in new])
    assert np.mean(real < 0.05) <= 0.15 and np.median(real) > 0.2, real
    assert np.mean(shuffled < 0.05) >= 0.8, shuffled
