"""EB with one prior variance per subgroup (``scope="group"``), checked by simulation from the EB model.

The cells are drawn around a *known* prior mean with a known prior variance per subgroup, so the
estimated ``A`` can be compared with the truth; a fitted prior model (SR, the latent posterior)
would add its own error to the spread, which is then part of ``A`` but unknown."""
import numpy as np
import pytest

from assessors.errors import ConfigError
from assessors.estimation.subgroup.direct import DirectEstimator
from assessors.estimation.subgroup.empirical_bayes import EmpiricalBayes
from assessors.estimation.subgroup.moments import moment_units, shrink_to_pool

from ._sim import KnownPrior


def heteroscedastic_world(n_llms=80, n_groups=12, n_per_group=30, seed=0):
    """Truth = prior mean + a bounded shock of standard deviation ``tau_g``: the prior is sharp on
    some subgroups (tau 0.01) and far off on others (tau 0.15)."""
    rng = np.random.default_rng(seed)
    tau = np.geomspace(0.01, 0.15, n_groups)
    mean = rng.uniform(0.3, 0.7, size=(n_llms, n_groups))
    shock = rng.uniform(-np.sqrt(3), np.sqrt(3), size=mean.shape)  # unit variance, kurtosis 1.8
    theta = mean + tau[None, :] * shock
    trials = np.full(mean.shape, float(n_per_group))
    return mean, theta, tau, trials, rng


def _runs(scope, reps=30):
    mean, theta, tau, trials, rng = heteroscedastic_world()
    a_hat, covered, err, width = [], [], [], []
    for rep in range(reps):
        k = rng.binomial(trials.astype(int), theta).astype(float)
        prior = KnownPrior(mean, random_state=rep)
        eb = EmpiricalBayes(regressor=prior, scope=scope, variance="unbiased").fit(k, trials)
        a_hat.append(eb.a_hat_.mean(0))
        covered.append((eb.lower_ <= theta) & (theta <= eb.upper_))
        err.append((eb.estimate_ - theta) ** 2)
        width.append(eb.upper_ - eb.lower_)
    dt = DirectEstimator().fit(k, trials)
    return tau, np.mean(a_hat, 0), np.stack(covered), np.stack(err), np.stack(width), dt, theta


def test_group_scope_recovers_each_subgroups_prior_variance_and_covers():
    mean, theta, tau, _, _ = heteroscedastic_world()
    realised = np.mean((theta - mean) ** 2, 0)  # the spread of this world's 80 cells per subgroup
    _, a_hat, covered, err, width, dt, _ = _runs("group")
    # mean over 30 draws: 0.88-0.96 times the realised spread where tau >= 0.05 (shrinkage towards
    # the pool pulls the largest down), and near 0 within the upward bias of the 0 floor and the
    # pool (measured 4e-4 at a realised 1e-4; s2 is about 8e-3)
    assert np.allclose(a_hat, realised, atol=1e-3, rtol=0.1), (a_hat, realised)
    assert covered.mean() >= 0.93, covered.mean()  # nominal 0.95 over 30 x 960 cells
    assert covered.mean((0, 1)).min() >= 0.90, covered.mean((0, 1))  # and within every subgroup
    assert width.mean() < np.mean(dt.upper_ - dt.lower_)


def test_group_scope_beats_one_variance_per_llm_when_subgroups_differ():
    _, a_group, cov_group, err_group, _, _, _ = _runs("group", reps=10)
    tau, a_llm, cov_llm, err_llm, _, _, _ = _runs("llm", reps=10)
    assert np.ptp(a_llm) < 0.2 * np.ptp(tau ** 2)  # one A per LLM blurs the subgroups together
    assert err_group.mean() < 0.9 * err_llm.mean(), (err_group.mean(), err_llm.mean())
    # one A per LLM is too small where the prior is far off: those subgroups under-cover
    assert cov_llm.mean((0, 1))[-1] < cov_group.mean((0, 1))[-1]


def test_moment_units_partition_the_cells():
    fold = np.array([0, 1, 1, 0, 1])
    for scope, n_units in (("group", 2), ("llm", 6), ("pooled", 2)):  # group splits its fold later
        units = moment_units(scope, fold, 3)
        count = np.zeros((3, 5))
        for rows, cols in units:
            count[rows, cols] += 1
        assert len(units) == n_units and np.all(count == 1)
    with pytest.raises(ConfigError, match="scope must be one of"):
        EmpiricalBayes(regressor=KnownPrior(np.full((3, 5), 0.5)), scope="cell").fit(np.ones((3, 5)),
                                                                                   np.full((3, 5), 4))


def test_subgroup_moments_shrink_to_the_pool_only_when_subgroups_do_not_differ():
    rng = np.random.default_rng(0)
    same = rng.normal(0.01, 0.02, size=(6, 20))  # 6 LLMs, subgroups alike: their means differ by noise only
    assert np.ptp(shrink_to_pool(same)) < 0.25 * np.ptp(same.mean(0))
    apart = same + np.linspace(0, 0.1, 20)  # subgroups spread 4x as far as the noise of their means (0.008)
    kept = (shrink_to_pool(apart) - apart.mean()) / (apart.mean(0) - apart.mean())
    assert 0.85 < kept.min() and kept.max() < 1.0, kept  # tau2 / (tau2 + v_g), about 0.94
    assert shrink_to_pool(apart[:1]) == pytest.approx(np.full(20, apart[:1].mean()))  # one LLM: the pool only


def binomial_world(n_llms=80, n_groups=12, n_per_group=100, seed=1):
    """Truth = prior mean + a bounded shock of variance ``a_g m(1-m)``: the prior's error shrinks for
    LLMs near 0 or 1, by a factor that differs between subgroups (``a_g`` from 5e-4 to 0.0175).
    Three in four prior means lie near 0 or 1 (0.05-0.12 or 0.88-0.95), the rest mid-range."""
    rng = np.random.default_rng(seed)
    a = np.geomspace(5e-4, 0.0175, n_groups)
    near = rng.uniform(0.05, 0.12, size=(n_llms, n_groups))
    near = np.where(rng.random(near.shape) < 0.5, near, 1 - near)
    mean = np.where(rng.random(near.shape) < 0.75, near, rng.uniform(0.35, 0.65, size=near.shape))
    shock = rng.uniform(-np.sqrt(3), np.sqrt(3), size=mean.shape)  # |shock| * sd <= min(m, 1-m): theta in [0, 1]
    theta = mean + np.sqrt(a[None, :] * mean * (1 - mean)) * shock
    return mean, theta, a, np.full(mean.shape, float(n_per_group)), rng


def _binomial_runs(scope, reps):
    mean, theta, a, trials, rng = binomial_world()
    a_hat, covered, width = [], [], []
    for rep in range(reps):
        k = rng.binomial(trials.astype(int), theta).astype(float)
        eb = EmpiricalBayes(regressor=KnownPrior(mean, random_state=rep), scope=scope, variance="unbiased").fit(k, trials)
        a_hat.append(eb.a_hat_ / (mean * (1 - mean)))  # the cell's A over its binomial scale: a_g
        covered.append((eb.lower_ <= theta) & (theta <= eb.upper_))
        width.append(eb.upper_ - eb.lower_)
    dt = DirectEstimator().fit(k, trials)
    return mean, theta, np.mean(a_hat, 0), np.stack(covered), np.stack(width), dt


def test_group_binomial_scope_recovers_a_g_and_covers_mid_range_llms():
    mean, theta, a, _, _ = binomial_world()
    realised = np.mean((theta - mean) ** 2 / (mean * (1 - mean)), 0)  # this world's a_g
    _, _, a_hat, covered, width, dt = _binomial_runs("group_binomial", reps=15)
    assert np.allclose(a_hat, a_hat[:1], atol=1e-12)  # one a_g per subgroup, scaled by each cell's m(1-m)
    # shrinkage to the pool lifts the smallest a_g and lowers the largest
    assert np.allclose(a_hat[0], realised, atol=1e-3, rtol=0.15), (a_hat[0], realised)
    assert covered.mean() >= 0.93, covered.mean()  # nominal 0.95 over 15 x 960 cells
    assert covered.mean((0, 1)).min() >= 0.90, covered.mean((0, 1))  # within every subgroup
    mid = np.abs(mean - 0.5) < 0.2  # the LLMs where one A per subgroup is too small
    assert covered[:, mid].mean() >= 0.93, covered[:, mid].mean()
    assert width.mean() < np.mean(dt.upper_ - dt.lower_)
    _, _, _, cov_group, _, _ = _binomial_runs("group", reps=15)
    top = np.zeros_like(mid)
    top[:, -4:] = True  # the 4 subgroups where the prior is furthest off
    # one A per subgroup, pulled down by the LLMs near 0 or 1, under-covers the mid-range ones there
    assert cov_group[:, mid & top].mean() < 0.90 <= covered[:, mid & top].mean() - 0.01, (
        cov_group[:, mid & top].mean(), covered[:, mid & top].mean())
