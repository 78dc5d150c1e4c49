"""Trust signals on constructed cases with known answers."""
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from assessors.errors import DataError
from assessors.trust.signals import (kappa, nearest, pairwise_kappa, range_check, similarity_pvalue, sufficiency,
                                     top_k_mean)


def test_identical_llm_has_kappa_one():
    rng = np.random.default_rng(0)
    a = (rng.random(100) < 0.6).astype(float)
    assert kappa(a, a[None])[0] == pytest.approx(1.0)


def test_independent_llm_has_kappa_about_zero():
    rng = np.random.default_rng(1)
    a = (rng.random(5000) < 0.7).astype(float)
    B = (rng.random((20, 5000)) < rng.uniform(0.2, 0.9, (20, 1))).astype(float)
    k = kappa(a, B)
    assert np.abs(k).max() < 0.05
    # same accuracy but unrelated errors: high raw agreement, yet kappa ~ 0
    assert np.mean(a == B[0]) > 0.3 and abs(k[0]) < 0.05


def test_opposite_llm_has_kappa_minus_one_and_matches_sklearn():
    rng = np.random.default_rng(2)
    a = rng.permutation(np.r_[np.ones(100), np.zeros(100)])
    assert kappa(a, 1 - a)[0] == pytest.approx(-1.0)  # -1 needs balanced classes: p_exp = 2p(1-p)
    b = np.where(rng.random(200) < 0.8, a, 1 - a)
    b[:15] = np.nan  # not answered: dropped pairwise
    keep = ~np.isnan(b)
    assert kappa(a, b)[0] == pytest.approx(cohen_kappa_score(a[keep], b[keep]))


def test_kappa_undefined_cases_are_nan():
    z = np.zeros(50)
    assert np.isnan(kappa(z, z[None])[0])  # both constant: chance agreement is already 1
    a = np.r_[np.ones(5), np.zeros(5)]
    assert np.isnan(kappa(a, a[None], min_overlap=20)[0])
    with pytest.raises(DataError, match=r"a\[0\] = 0.5"):
        kappa(np.r_[0.5, np.zeros(9)], np.zeros((1, 10)))


def test_pairwise_nearest_topk_and_pvalue():
    rng = np.random.default_rng(3)
    base = (rng.random(300) < 0.5).astype(float)
    S = np.stack([np.where(rng.random(300) < f, base, 1 - base) for f in (0.95, 0.9, 0.8, 0.5)])
    K = pairwise_kappa(S)
    assert K.shape == (4, 4) and np.isnan(np.diag(K)).all()
    assert np.allclose(K, K.T, equal_nan=True)
    near = nearest(kappa(base, S), ["a", "b", "c", "d"], k=2)
    assert [n for n, _ in near] == ["a", "b"]
    assert top_k_mean([0.9, np.nan, 0.5, 0.7], 2) == pytest.approx(0.8)
    assert similarity_pvalue(0.1, [0.5, 0.6, 0.7]) == pytest.approx(0.25)
    assert similarity_pvalue(0.65, [0.5, 0.6, 0.7]) == pytest.approx(0.75)


def test_range_flags_extrapolation():
    T = np.stack([np.r_[np.ones(k), np.zeros(100 - k)] for k in (30, 50, 70)])
    up = range_check(np.r_[np.ones(90), np.zeros(10)], T)
    assert up.flag == "above" and up.excess == pytest.approx(0.2) and up.position > 1
    down = range_check(np.r_[np.ones(10), np.zeros(90)], T)
    assert down.flag == "below" and down.excess == pytest.approx(0.2)
    inside = range_check(np.r_[np.ones(60), np.zeros(40)], T)
    assert inside.flag is None and inside.excess == 0 and inside.position == pytest.approx(0.75)
    assert range_check(np.r_[np.ones(72), np.zeros(28)], T, margin=0.05).flag is None


def test_sufficiency_warnings():
    assert sufficiency(np.zeros(100)).warnings[0].startswith("all 100 answered reference items failed")
    assert "all-1" in sufficiency(np.ones(100)).warnings[0]
    r = np.r_[np.ones(30), np.zeros(30), np.full(40, np.nan)]
    s = sufficiency(r)
    assert s.n_answered == 60 and "only 60 of 100" in s.warnings[0]
    assert sufficiency(np.r_[np.ones(2), np.zeros(98)]).warnings[0].startswith("only 2 reference successes")
    ok = sufficiency(np.r_[np.ones(40), np.zeros(60)])
    assert ok.ok and ok.n_success == 40
