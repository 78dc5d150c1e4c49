"""MDAD on constructed cases with known answers."""
import numpy as np
import pandas as pd
from scipy.stats import norm

from assessors.estimation import mdad as M


def test_known_flip_threshold():
    # 11 LLMs 1 point apart; the "micro-benchmark" reverses the order of every pair < 3 points apart
    full = np.arange(11) / 100
    diffs, agrees = [], []
    d, a = M.pair_agreement(full, full)  # identical ranking
    assert a.min() == 1
    i, j = np.triu_indices(11, 1)
    gap = np.abs(full[i] - full[j]) * 100
    agree = (gap >= 3 - 1e-9).astype(float)
    curve, boots = M.agreement_curve([gap], [agree], np.arange(0, 11, 1.0), n_boot=20)
    assert M.mdad(curve["centroid"], curve["agreement"]) == 3.5
    point, lo, hi = M.mdad_with_ci(curve, boots)
    assert point == lo == hi == 3.5


def test_gaussian_noise_agreement_matches_theory():
    # estimate = truth + N(0, s^2) independently: P(agree | d) = Phi(d / (s sqrt 2))
    rng = np.random.default_rng(0)
    s = 2.0
    full = rng.uniform(0, 30, 60) / 100
    diffs, agrees = [], []
    for _ in range(300):
        est = full + rng.normal(0, s, 60) / 100
        d, a = M.pair_agreement(full, est)
        diffs.append(d)
        agrees.append(a)
    edges = np.arange(0, 10.5, 0.5)
    curve, boots = M.agreement_curve(diffs, agrees, edges, n_boot=50)
    theory = norm.cdf(curve["centroid"] / (s * np.sqrt(2)))
    assert np.abs(curve["agreement"] - theory).max() < 0.03
    # theory crosses 0.8 at d = 0.8416 * s * sqrt 2 = 2.38: first bucket centroid above it is 2.75
    # (2.25 is below the crossing, but a bucket's average over [2, 2.5] straddles it: allow either)
    assert M.mdad(curve["centroid"], curve["agreement"]) in (2.25, 2.75)
    point, lo, hi = M.mdad_with_ci(curve, boots)
    assert lo <= point <= hi


def test_evaluate_ranks_by_raw_mean_and_estimator():
    from assessors.estimation.benchmark.random_sampling import RandomSampling
    from tests.estimation.conftest import simulate

    S, _ = simulate(n_llms=30, n_items=400, seed=2)
    curves, summary = M.evaluate(S, {"rs": RandomSampling()}, [20, 200], 5, np.arange(0, 21, 2.0), n_boot=10,
                                 progress=False)
    assert set(summary["method"]) == {"raw_mean", "rs"}
    # RandomSampling with a shared core set is exactly the raw mean
    a = curves[curves["method"] == "raw_mean"]["agreement"].to_numpy()
    b = curves[curves["method"] == "rs"]["agreement"].to_numpy()
    np.testing.assert_allclose(a, b)
    # larger micro-benchmarks agree more on close pairs
    small = curves[(curves["method"] == "raw_mean") & (curves["size"] == 20)]["agreement"].iloc[:3].mean()
    big = curves[(curves["method"] == "raw_mean") & (curves["size"] == 200)]["agreement"].iloc[:3].mean()
    assert big > small


def test_evaluate_with_a_fitted_selector_uses_its_reference_set():
    from assessors.selection.base import Selector
    from tests.estimation.conftest import simulate

    class Hardest(Selector):
        """Constructed known answer: picks the items the sources fail most (all-fail core)."""

        def _select(self, success, features, validation):
            # stable: among tied means the lowest column index comes first, so the core (columns
            # 0-39) fills the micro-benchmark before any other item that happens to tie on the
            # training sources (quicksort tie order differs between numpy releases)
            return np.argsort(np.nanmean(success, 0), kind="stable")[: self.size]

    S, _ = simulate(n_llms=30, n_items=400, seed=2)
    S[:, :40] = 0.0  # 40 items nobody solves: the selector's micro-benchmark cannot rank anyone
    curves, summary = M.evaluate(S, {}, [20], 4, np.arange(0, 41, 4.0), n_boot=10, progress=False,
                                 selectors={"random": None, "hardest": Hardest()}, selector_trials=3)
    hard = summary[summary["selector"] == "hardest"].iloc[0]
    rand = summary[summary["selector"] == "random"].iloc[0]
    assert (hard["trials"], rand["trials"]) == (3, 4)
    # every pair ties on an all-zero core -> agreement 0.5 everywhere, MDAD undefined
    agree = curves[(curves["selector"] == "hardest") & (curves["pairs"] > 0)]["agreement"]
    np.testing.assert_allclose(agree, 0.5)
    assert np.isnan(hard["mdad"]) and np.isfinite(rand["mdad"])
