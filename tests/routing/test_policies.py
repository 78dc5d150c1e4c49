"""Routing policies on constructed P(success)/cost matrices with known answers, and calibration by simulation."""
from __future__ import annotations

import numpy as np
import pytest

from assessors.errors import ConfigError, DataError
from assessors.routing.abstain import AbstainRouter
from assessors.routing.base import realised
from assessors.routing.threshold import ThresholdRouter
from assessors.routing.utility import UtilityRouter

# 3 LLMs x 4 prompts; costs 1 < 2 < 10
P = np.array([[0.9, 0.2, 0.6, 0.1],
              [0.95, 0.7, 0.5, 0.2],
              [0.99, 0.9, 0.9, 0.3]])
C = np.tile([[1.0], [2.0], [10.0]], (1, 4))
NAMES = ["small", "mid", "big"]


def test_threshold_picks_cheapest_above_threshold_else_most_likely():
    r = ThresholdRouter(threshold=0.65).route(P, C, NAMES)
    assert r.chosen == ["small", "mid", "big", "big"]
    np.testing.assert_allclose(r.expected_cost, [1, 2, 10, 10])
    rec = r.records()[1]
    assert rec["llm"] == "mid" and rec["p_success"] == {"small": 0.2, "mid": 0.7, "big": 0.9} and not rec["abstained"]


def test_abstain_rejects_when_no_llm_reaches_threshold():
    r = AbstainRouter(threshold=0.65).route(P, C, NAMES)
    assert r.chosen == ["small", "mid", "big", None]
    assert r.expected_cost[3] == 0 and r.records()[3]["abstained"]


def test_utility_tradeoff():
    assert UtilityRouter(lam=0.0).route(P, C, NAMES).chosen == ["big"] * 4
    # lam = 0.05: P - 0.05 C -> small .85/.15/.55/.05, mid .85/.6/.4/.1, big .49/.4/.4/-.2
    # prompt 0 ties small/mid at .85: the cheaper wins
    assert UtilityRouter(lam=0.05).route(P, C, NAMES).chosen == ["small", "mid", "small", "mid"]
    assert UtilityRouter(lam=1e6).route(P, C, NAMES).chosen == ["small"] * 4


def test_bad_inputs():
    bad_threshold = ThresholdRouter(threshold=1.5)  # scikit-learn contract: no validation in __init__
    with pytest.raises(ConfigError, match="threshold"):
        bad_threshold.route(P, C, NAMES)
    with pytest.raises(ConfigError, match="lam"):
        UtilityRouter(lam=-1).route(P, C, NAMES)
    with pytest.raises(ConfigError, match="threshold"):
        AbstainRouter(threshold=-0.1).sweep(P, P, C)
    with pytest.raises(DataError, match="shape"):
        ThresholdRouter().route(P, C[:2])
    with pytest.raises(DataError, match="NaN"):
        ThresholdRouter().route(np.where(P > 0.9, np.nan, P), C)
    with pytest.raises(DataError, match="names"):
        ThresholdRouter().route(P, C, ["a"])


def _simulate(m=4000, seed=0):
    """3 LLMs with calibrated P: S ~ Bernoulli(P); costs 1, 3, 20 per prompt."""
    rng = np.random.default_rng(seed)
    skill = np.array([-0.5, 0.3, 1.5])[:, None]
    diff = rng.normal(0, 1.5, m)[None, :]
    P = 1 / (1 + np.exp(-(skill - diff)))
    S = (rng.random(P.shape) < P).astype(float)
    C = np.tile([[1.0], [3.0], [20.0]], (1, m))
    return P, S, C


@pytest.mark.parametrize("router", [ThresholdRouter(), UtilityRouter()])
def test_calibrate_to_target_accuracy_holds_out_of_sample(router):
    P, S, C = _simulate(seed=1)
    target = 0.75
    router.calibrate(P, S, C, target_accuracy=target)
    assert router.calibration_["accuracy"] >= target
    # cheaper than always using the best LLM, which is what a router is for
    assert router.calibration_["mean_cost"] < 20
    P2, S2, C2 = _simulate(seed=2)
    y, c = realised(router.route(P2, C2).choice, S2, C2)
    assert abs(np.mean(y) - target) < 0.03  # generalises to fresh prompts (SE ~ 0.007)


def test_calibrate_to_budget():
    P, S, C = _simulate(seed=3)
    r = ThresholdRouter().calibrate(P, S, C, budget=5.0)
    assert r.calibration_["mean_cost"] <= 5.0
    # the most accurate within budget: a looser budget buys at least as much accuracy
    r2 = ThresholdRouter().calibrate(P, S, C, budget=10.0)
    assert r2.calibration_["accuracy"] >= r.calibration_["accuracy"]
    assert ThresholdRouter(threshold=0.3).knob_value == 0.3 and r.knob_value == r.threshold_


def test_abstain_calibration_targets_selective_accuracy():
    P, S, C = _simulate(seed=4)
    r = AbstainRouter().calibrate(P, S, C, target_accuracy=0.9)
    cal = r.calibration_
    assert 0 < cal["coverage"] < 1
    P2, S2, C2 = _simulate(seed=5)
    ch = r.route(P2, C2).choice
    y, _ = realised(ch, S2, C2)
    assert abs(np.nanmean(y) - 0.9) < 0.03


def test_calibrate_errors():
    P, S, C = _simulate(m=200)
    with pytest.raises(ConfigError, match="exactly one"):
        ThresholdRouter().calibrate(P, S, C)
    with pytest.raises(ConfigError, match="reaches"):
        ThresholdRouter().calibrate(P, S, C, target_accuracy=1.01)
    with pytest.raises(ConfigError, match="within"):
        ThresholdRouter().calibrate(P, S, C, budget=0.5)
