import itertools

import numpy as np
import pandas as pd
import pytest
from sklearn import metrics as skm
from sklearn.calibration import calibration_curve

from assessors import metrics as M
from assessors.errors import DataError


@pytest.fixture
def yp():
    rng = np.random.default_rng(0)
    p = rng.random(500)
    y = (rng.random(500) < p).astype(float)
    return y, p


def test_against_sklearn(yp):
    y, p = yp
    assert M.auc(y, p) == pytest.approx(skm.roc_auc_score(y, p))
    assert M.brier(y, p) == pytest.approx(np.mean((p - y) ** 2))
    assert M.log_loss(y, p) == pytest.approx(skm.log_loss(y, p))
    assert 0.5 < M.auc(y, p) < 1


@pytest.mark.parametrize("n, levels", [(2, 0), (7, 3), (40, 5), (300, 0), (300, 12), (1000, 50)])
def test_auc_is_sklearns_to_the_last_bit(n, levels):
    """Random outcomes and scores, with ties (scores drawn from a few levels) and without (levels 0)."""
    rng = np.random.default_rng(n + levels)
    for _ in range(50):
        p = rng.integers(0, levels, n) / levels if levels else rng.random(n)
        y = (rng.random(n) < rng.random()).astype(float)
        y[:2] = [0.0, 1.0]  # both classes
        rng.shuffle(y)
        for scores in (p, p.astype(np.float32), 1 - p, np.round(p, 1)):
            assert M.auc(y, scores) == skm.roc_auc_score(y, scores)


def test_auc_of_constant_scores_and_perfect_rankings():
    assert M.auc([0, 1, 0, 1], [0.3] * 4) == 0.5
    assert M.auc([0, 0, 1, 1], [0.1, 0.2, 0.3, 0.4]) == 1.0 and M.auc([1, 1, 0, 0], [0.1, 0.2, 0.3, 0.4]) == 0.0


def test_log_loss_is_clipped_not_infinite():
    # one certain miss among two: clipped at EPS -> (-log(EPS) + 0) / 2
    assert M.log_loss([1, 0], [0.0, 0.0]) == pytest.approx(-np.log(M.EPS) / 2)
    assert M.log_loss([1, 1], [1.0, 1.0]) == pytest.approx(0.0, abs=1e-12)


def test_ece_on_a_constructed_case():
    # bin (0.1, 0.2]: four predictions of 0.15, one success -> |0.25 - 0.15| = 0.10, weight 4/10
    # bin (0.8, 0.9]: six predictions of 0.85, all successes -> |1 - 0.85| = 0.15, weight 6/10
    p = [0.15] * 4 + [0.85] * 6
    y = [1, 0, 0, 0] + [1] * 6
    assert M.ece(y, p) == pytest.approx(0.4 * 0.10 + 0.6 * 0.15)
    # perfectly calibrated bins -> 0; with one bin, ECE = |base rate - mean p|
    assert M.ece([1, 0, 0, 0, 1, 1, 1, 1, 1], [0.25] * 4 + [0.8] * 5) == pytest.approx(
        (4 / 9) * 0 + (5 / 9) * abs(1 - 0.8)
    )
    assert M.ece([1, 0, 1, 0], [0.5, 0.5, 0.5, 0.5]) == pytest.approx(0.0)
    assert M.ece([1, 1, 0], [0.2, 0.9, 0.4], n_bins=1) == pytest.approx(abs(2 / 3 - 0.5))


def test_calibration_bins_match_sklearn(yp):
    y, p = yp
    p = np.concatenate([p, [0.0, 0.1, 0.2, 1.0]])  # bin edges land where sklearn puts them
    y = np.concatenate([y, [0, 1, 0, 1]])
    bins = M.calibration_bins(y, p, n_bins=10)
    frac, mean = calibration_curve(y, p, n_bins=10, strategy="uniform")
    full = bins[bins["count"] > 0]
    np.testing.assert_allclose(full["frac_pos"], frac)
    np.testing.assert_allclose(full["mean_p"], mean)
    assert bins["count"].sum() == len(y) and len(bins) == 10


def test_evaluate_single_class_and_nan():
    r = M.evaluate([1, 1, np.nan, 1], [0.9, 0.6, 0.1, 0.7])
    assert np.isnan(r["auc"]) and r["n"] == 3 and r["base_rate"] == 1.0
    assert r["brier"] == pytest.approx(np.mean([0.01, 0.16, 0.09]))
    assert set(r) == {"auc", "brier", "log_loss", "ece", "n", "base_rate"}
    empty = M.evaluate([np.nan], [0.3])
    assert empty["n"] == 0 and np.isnan(empty["brier"]) and np.isnan(empty["ece"])


def test_bad_inputs():
    with pytest.raises(DataError, match="0/1"):
        M.auc([0, 2], [0.1, 0.2])
    with pytest.raises(DataError, match=r"p\[1\]"):
        M.brier([0, 1], [0.1, 1.2])
    with pytest.raises(DataError, match="entries"):
        M.evaluate([0, 1], [0.1])


def test_win_rates_constructed_table():
    scores = pd.DataFrame(
        {"llm1": [0.8, 0.7, 0.6], "llm2": [0.7, 0.7, 0.5], "llm3": [np.nan, 0.9, 0.6], "llm4": [np.nan, np.nan, 0.99]},
        index=["A", "B", "C"],
    )
    wr = M.win_rates(scores)
    # llm1: A beats 2/2, B 1/2, C 0; llm2: A and B tie (half each) -> 0.75, C 0;
    # llm3: A absent, B beats C -> 1, C 0; llm4: one candidate -> skipped.
    assert wr["A"] == pytest.approx((1 + 0.75) / 2)
    assert wr["B"] == pytest.approx((0.5 + 0.75 + 1) / 3)
    assert wr["C"] == pytest.approx(0.0)
    assert wr.idxmax() == "A"
    assert scores.mean(axis=1).idxmax() == "B"  # mean AUC would pick differently
    assert wr.name == "win_rate" and list(wr.index) == ["A", "B", "C"]
    # losses: lower is better flips the order
    assert M.win_rates(-scores, higher_is_better=False).equals(wr)
    assert np.isnan(M.win_rates(pd.DataFrame({"x": [np.nan, 0.5]}, index=["a", "b"]))["a"])


def test_rank_by_win_rate_breaks_ties_by_mean_auc_not_row_order():
    # each candidate wins on one LLM: equal win rates; "deep" has the higher mean AUC
    scores = pd.DataFrame({"llm1": [0.70, 0.69], "llm2": [0.60, 0.70]}, index=["shallow", "deep"])
    ranked = M.rank_by_win_rate(scores)
    assert ranked["win_rate"].tolist() == [0.5, 0.5]
    assert ranked.index[0] == "deep"
    assert ranked.loc["deep", "mean_val_auc"] == pytest.approx(0.695)
    # a higher win rate still beats a higher mean AUC
    scores = pd.DataFrame({"a": [0.71, 0.70], "b": [0.61, 0.60], "c": [0.50, 0.99]}, index=["steady", "spiky"])
    assert M.rank_by_win_rate(scores).index[0] == "steady"


def _win_rates_bruteforce(scores: pd.DataFrame) -> pd.Series:
    out = {}
    for c in scores.index:
        rates = []
        for llm in scores.columns:
            me = scores.at[c, llm]
            others = [scores.at[o, llm] for o in scores.index if o != c and not np.isnan(scores.at[o, llm])]
            if np.isnan(me) or not others:
                continue
            rates.append(np.mean([1.0 if me > o else 0.5 if me == o else 0.0 for o in others]))
        out[c] = np.mean(rates) if rates else np.nan
    return pd.Series(out)


@pytest.mark.parametrize("seed", range(5))
def test_win_rates_match_pairwise_definition(seed):
    rng = np.random.default_rng(seed)
    vals = rng.choice([0.5, 0.6, 0.7, 0.8, np.nan], size=(6, 9))  # many ties and gaps
    scores = pd.DataFrame(vals, index=[f"c{i}" for i in range(6)], columns=[f"l{j}" for j in range(9)])
    pd.testing.assert_series_equal(M.win_rates(scores), _win_rates_bruteforce(scores), check_names=False)


def test_win_rates_recover_the_best_candidate_by_simulation():
    # candidate k has true AUC 0.60 + 0.02 k; noisy per-LLM estimates; win rate ranks them right
    rng = np.random.default_rng(0)
    true = 0.60 + 0.02 * np.arange(5)
    scores = pd.DataFrame(true[:, None] + rng.normal(0, 0.02, size=(5, 40)), index=list("abcde"))
    wr = M.win_rates(scores)
    assert list(wr.sort_values().index) == list("abcde")


def test_per_llm_auc_drops_unevaluated_cells_row_by_row():
    rng = np.random.default_rng(3)
    P = rng.random((3, 200))
    S = (rng.random((3, 200)) < P).astype(float)
    S[0, :50] = np.nan  # not evaluated: its prediction must not count
    P[0, :50] = np.nan
    S[2] = np.where(np.isnan(S[2]), np.nan, 1.0)  # one class left: AUC undefined
    got = M.per_llm_auc(S, P)
    assert got.shape == (3,)
    assert got[0] == pytest.approx(skm.roc_auc_score(S[0, 50:], P[0, 50:]))
    assert got[1] == pytest.approx(skm.roc_auc_score(S[1], P[1]))
    assert np.isnan(got[2])
    assert M.masked_auc(S[0], P[0]) == got[0]
    with pytest.raises(DataError):
        M.per_llm_auc(S, P[:, :10])


@pytest.mark.parametrize("n, acc", [(60, 0.3), (400, 0.5), (1000, 0.8)])
def test_chance_auc_low_is_the_chance_rankings_lower_quantile(n, acc):
    from assessors.metrics import chance_auc_low, rank_auc

    rng = np.random.default_rng(n)
    n1 = round(n * acc)
    Y = np.zeros((4000, n))
    Y[:, :n1] = 1
    aucs = rank_auc(rng.permuted(Y, axis=1), rng.random(n))  # scores that know nothing of the outcomes
    low = chance_auc_low(n, acc, 0.9)
    assert 0.035 <= np.mean(aucs < low) <= 0.065  # nominal 0.05 below the central 90% interval
    assert np.isnan(chance_auc_low(10, 0.0, 0.9))


@pytest.mark.parametrize("level", [0.5, 0.9])
def test_central_interval_covers_its_level_of_fresh_draws(level):
    # the interval of many draws from a distribution holds about `level` of fresh draws from it, a
    # share (1 - level) / 2 on each side
    rng = np.random.default_rng(0)
    low, high = M.central_interval(rng.normal(size=20000), level)
    fresh = rng.normal(size=20000)
    assert np.mean((fresh >= low) & (fresh <= high)) == pytest.approx(level, abs=0.02)
    assert np.mean(fresh < low) == pytest.approx((1 - level) / 2, abs=0.02)
    assert M.central_interval([3.0], level) == (3.0, 3.0)
