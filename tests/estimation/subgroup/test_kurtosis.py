"""EB with one kurtosis per fold (``kurtosis="fold"``) beside one ``A`` per LLM, checked by
simulation from the EB model: 3 subgroups per fold, as on the leaderboard matrices, where one
LLM's cells alone leave the kurtosis to AKP's floor."""
import numpy as np
import pytest

from assessors.errors import ConfigError
from assessors.estimation.subgroup.direct import DirectEstimator
from assessors.estimation.subgroup.empirical_bayes import EmpiricalBayes

from ._sim import KnownPrior


def heavy_tailed_world(n_llms=60, n_groups=6, n_per_group=30, seed=0):
    """Truth = prior mean + ``tau_l`` times a clipped Laplace shock (kurtosis about 5.6): the prior's
    spread differs between LLMs (``tau_l`` from 0.02 to 0.10), its shape does not."""
    rng = np.random.default_rng(seed)
    tau = np.geomspace(0.02, 0.10, n_llms)
    mean = rng.uniform(0.3, 0.7, size=(n_llms, n_groups))
    shock = np.clip(rng.laplace(0, np.sqrt(0.5), size=mean.shape), -3.5, 3.5)  # |tau shock| <= 0.35: theta in [0, 1]
    theta = mean + tau[:, None] * shock
    return mean, theta, np.full(mean.shape, float(n_per_group)), rng


def _runs(kurtosis, reps):
    mean, theta, trials, rng = heavy_tailed_world()
    kappa, covered, width, err = [], [], [], []
    for rep in range(reps):
        k = rng.binomial(trials.astype(int), theta).astype(float)
        eb = EmpiricalBayes(regressor=KnownPrior(mean, random_state=rep), variance="fixed_point",
                            kurtosis=kurtosis).fit(k, trials)
        fold = eb.regressor_.fold_
        assert kurtosis == "unit" or all(np.ptp(eb.kappa_[:, fold == f]) == 0 for f in (0, 1))  # one per fold
        kappa.append([eb.kappa_[:, fold == f].mean() for f in (0, 1)])
        covered.append((eb.lower_ <= theta) & (theta <= eb.upper_))
        width.append(eb.upper_ - eb.lower_)
        err.append((eb.estimate_ - theta) ** 2)
    dt = DirectEstimator().fit(k, trials)
    return mean, theta, np.array(kappa), np.stack(covered), np.stack(width), np.stack(err), dt


def test_fold_kurtosis_recovers_the_pooled_kurtosis_and_covers_with_narrower_intervals():
    mean, theta, kappa, covered, width, err, dt = _runs("fold", reps=20)
    e = theta - mean
    realised = np.mean(e ** 4) / np.mean(e ** 2) ** 2  # this world's kurtosis around one pooled A (7.6)
    # the moments are unbiased (test below); their ratio is noisy (10-90%: 2 to 21 over 200 draws) and
    # skewed up, which widens the intervals, never narrows them on average
    assert np.median(kappa) == pytest.approx(realised, rel=0.3), (np.median(kappa), realised)
    assert covered.mean() >= 0.93, covered.mean()  # nominal 0.95 over 20 x 360 cells
    assert covered.mean((0, 1)).min() >= 0.90, covered.mean((0, 1))  # within every subgroup
    assert covered.mean((0, 2))[:20].mean() >= 0.90  # and for the third of LLMs with the smallest spread
    _, _, kappa_unit, cov_unit, width_unit, err_unit, _ = _runs("unit", reps=20)
    assert np.median(kappa_unit) > 2 * np.median(kappa)  # 3 cells per LLM: the PMT floor dominates (20 against 6.7)
    assert width.mean() < 0.95 * width_unit.mean(), (width.mean(), width_unit.mean())
    assert np.array_equal(err, err_unit)  # the kurtosis changes the intervals only
    assert width.mean() < np.mean(dt.upper_ - dt.lower_)


def test_unknown_kurtosis_source_is_a_config_error():
    mean, theta, trials, rng = heavy_tailed_world(n_llms=4)
    with pytest.raises(ConfigError, match="kurtosis must be one of"):
        EmpiricalBayes(regressor=KnownPrior(mean), kurtosis="cell").fit(np.round(theta * trials), trials)


def test_binomial_central_moments_are_unbiased():
    from scipy.stats import binom

    from assessors.estimation.subgroup.binomial_moments import central_moment

    for n in (4, 10, 31):
        k = np.arange(n + 1, dtype=float)
        for theta in (0.0, 0.04, 0.5, 0.93):
            for m in (0.1, 0.6):
                for order in (2, 4):
                    est = central_moment(k, np.full_like(k, n), np.full_like(k, m), order)
                    assert np.sum(binom.pmf(k, n, theta) * est) == pytest.approx((theta - m) ** order, abs=1e-12)
    assert np.isnan(central_moment(np.array([1.0]), np.array([3.0]), np.array([0.5]), 4)).all()
