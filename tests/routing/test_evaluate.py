"""Cost-accuracy maths (hull, AIQ, cost models) and the kNN / MF baselines on constructed data."""
from __future__ import annotations

import numpy as np
import pytest

from assessors.routing.evaluate import aiq, cost_to_reach, fit_cost_models, reference_points, upper_hull
from assessors.routing.knn import KNNSuccess
from assessors.routing.mf import MFSuccess


def test_upper_hull_drops_dominated_and_concave_points():
    cost = np.array([1, 2, 3, 4, 5.0])
    acc = np.array([0.5, 0.55, 0.8, 0.7, 0.85])
    hx, hy = upper_hull(cost, acc)
    # (2, .55) lies under the chord (1,.5)-(3,.8); (4, .7) is dominated by (3, .8)
    np.testing.assert_array_equal(hx, [1, 3, 5])
    np.testing.assert_array_equal(hy, [0.5, 0.8, 0.85])


def test_aiq_known_values():
    # a single point: flat accuracy over the whole range
    assert aiq(np.array([2.0]), np.array([0.6]), 0, 10) == pytest.approx(0.6)
    # linear from (0, .5) to (10, 1): mean .75
    assert aiq(np.array([0.0, 10.0]), np.array([0.5, 1.0]), 0, 10) == pytest.approx(0.75, abs=1e-6)


def test_cost_to_reach():
    import pandas as pd

    cv = pd.DataFrame({"accuracy": [0.5, 0.8, 0.9], "cost": [1.0, 5.0, 3.0]})
    assert cost_to_reach(cv, 0.8) == 3.0 and np.isnan(cost_to_reach(cv, 0.95))


def test_cost_models_recover_prices():
    rng = np.random.default_rng(0)
    prompts = ["x" * int(n) for n in rng.integers(100, 4000, 300)]
    tok = np.array([len(p) for p in prompts]) / 4
    cost = np.stack([0.001 + 0.5 * tok / 1000, 0.0 + 2.0 * tok / 1000])
    cm = fit_cost_models(prompts, cost)
    assert cm[0].per_item == pytest.approx(0.001, abs=1e-9) and cm[0].per_1k_input == pytest.approx(0.5)
    assert cm[1].per_1k_input == pytest.approx(2.0)


def test_reference_points_oracle_and_random():
    S = np.array([[1, 0, 0, np.nan], [1, 1, 0, 1.0]])
    C = np.array([[1.0] * 4, [10.0] * 4])
    pts = reference_points(S, C, ["cheap", "dear"]).set_index("method")
    assert pts.loc["cheap", "accuracy"] == 0.25 and pts.loc["dear", "cost"] == 40
    # oracle: cheap on 0, dear on 1 and 3, cheapest (cheap) on 2 where nobody succeeds
    assert pts.loc["oracle", "accuracy"] == 0.75 and pts.loc["oracle", "cost"] == 1 + 10 + 1 + 10
    assert pts.loc["random", "accuracy"] == pytest.approx(0.5, abs=0.03)


def _clustered(n=600, seed=0):
    """2 prompt clusters; LLM 0 succeeds on cluster A, LLM 1 on cluster B, LLM 2 on both."""
    rng = np.random.default_rng(seed)
    lab = rng.integers(0, 2, n)
    X = rng.normal(0, 0.3, (n, 8)).astype(np.float32)
    X[:, 0] += np.where(lab == 0, 2, -2)
    p = np.stack([np.where(lab == 0, 0.9, 0.1), np.where(lab == 1, 0.9, 0.1), np.full(n, 0.9)])
    S = (rng.random(p.shape) < p).astype(np.float32)
    return X, S, p


@pytest.mark.parametrize("model", [KNNSuccess(k=15), MFSuccess(dim=8, epochs=150)])
def test_baselines_recover_cluster_skills(model):
    X, S, p = _clustered()
    model.fit(X[:400], S[:, :400])
    P = model.predict_success(X[400:])
    assert P.shape == (3, 200)
    assert np.abs(P - p[:, 400:]).mean() < 0.12


def test_mf_folds_in_new_llm_from_reference_results():
    X, S, p = _clustered(seed=1)
    mf = MFSuccess(dim=8, epochs=150).fit(X[:400], S[:2, :400])  # trained without LLM 2
    ref = np.arange(0, 400, 4)  # 100 reference items
    mf.add_llm(X[ref], S[2, ref])
    P = mf.predict_success(X[400:])
    assert P.shape == (3, 200)
    # the folded-in generalist is predicted far more likely to succeed than either specialist
    assert P[2].mean() > 0.7 and P[2].mean() > P[:2].mean(1).max() + 0.2
