"""EB with ``A`` as an LLM factor times a subgroup factor (``scope="factor"``, and times ``m(1-m)``
in ``factor_binomial``), checked by simulation from the EB model: 3 subgroups per fold, as on the
leaderboard matrices, and a prior spread whose sd differs threefold by LLM and whose ``A`` differs
twentyfold by subgroup; ``factor_binomial`` in ``test_group_scope.py``'s ``A = a_g m(1-m)`` world."""
import numpy as np
import pytest

from assessors.estimation.subgroup.direct import DirectEstimator
from assessors.estimation.subgroup.empirical_bayes import EmpiricalBayes

from ._sim import KnownPrior


def factor_world(n_llms=80, n_groups=6, n_per_group=30, seed=0):
    """Truth = prior mean + ``sqrt(a_l c_g)`` times a clipped Laplace shock (kurtosis about 4.6)."""
    rng = np.random.default_rng(seed)
    a = np.geomspace(0.02, 0.06, n_llms) ** 2
    c = np.geomspace(0.15, 3.0, n_groups)[rng.permutation(n_groups)]
    mean = rng.uniform(0.3, 0.7, size=(n_llms, n_groups))
    shock = np.clip(rng.laplace(0, np.sqrt(0.5), size=mean.shape), -2.5, 2.5)  # |sd shock| <= 0.26: theta in [0, 1]
    theta = mean + np.sqrt(a[:, None] * c[None, :]) * shock
    return mean, theta, a, c, np.full(mean.shape, float(n_per_group)), rng


def _runs(scope, reps):
    mean, theta, _, _, trials, rng = factor_world()
    out = {key: [] for key in ("a_hat", "scale", "covered", "width", "err")}
    for rep in range(reps):
        k = rng.binomial(trials.astype(int), theta).astype(float)
        eb = EmpiricalBayes(regressor=KnownPrior(mean, random_state=rep), scope=scope, variance="fixed_point",
                            kurtosis="fold").fit(k, trials)
        out["a_hat"].append(eb.a_hat_)
        out["scale"].append(eb.group_scale_)
        out["covered"].append((eb.lower_ <= theta) & (theta <= eb.upper_))
        out["width"].append(eb.upper_ - eb.lower_)
        out["err"].append((eb.estimate_ - theta) ** 2)
    dt = DirectEstimator().fit(k, trials)
    return {key: np.stack(v) for key, v in out.items()}, dt


@pytest.fixture(scope="module")
def runs():
    return _runs("factor", reps=20), _runs("llm", reps=20)[0]


def test_factor_scope_recovers_the_subgroup_and_llm_factors(runs):
    (fac, _), _ = runs
    mean, theta, a, c, _, _ = factor_world()
    a_hat = fac["a_hat"].mean(0)
    assert np.all(fac["a_hat"] >= 0)
    # each subgroup's A follows its factor c, shrunk towards 1 (a subgroup's mean moment over 80 LLMs
    # has a noise sd of about 1.3e-3, beside a mean A of 1.2e-3)
    assert np.corrcoef(np.log(a_hat.mean(0)), np.log(c))[0, 1] > 0.9
    # the LLMs' spreads (ninefold in A) barely show: 3 cells per fold, each with noise 5 times A,
    # leave little of them beyond noise, so the LLM factors are shrunk most of the way to the pool
    assert np.corrcoef(a_hat.mean(1), a)[0, 1] > 0.1
    realised = (theta - mean) ** 2
    assert a_hat.mean() == pytest.approx(realised.mean(), rel=0.3), (a_hat.mean(), realised.mean())


def test_factor_scope_covers_and_beats_one_variance_per_llm(runs):
    (fac, dt), llm = runs
    covered = fac["covered"]
    assert covered.mean() >= 0.93, covered.mean()  # nominal 0.95 over 20 x 480 cells
    assert covered.mean((0, 1)).min() >= 0.88, covered.mean((0, 1))  # within every subgroup (0.89 at c = 3)
    assert covered.mean((0, 2))[:27].mean() >= 0.93  # and for the third of LLMs with the smallest spread
    # one A per LLM from 3 cells is mostly noise: the factors halve EB's MSE and narrow the intervals
    assert fac["err"].mean() < 0.7 * llm["err"].mean(), (fac["err"].mean(), llm["err"].mean())
    assert fac["width"].mean() < 0.8 * llm["width"].mean()
    assert fac["width"].mean() < np.mean(dt.upper_ - dt.lower_)


def test_factor_binomial_scope_recovers_a_g_times_m_one_minus_m():
    from .test_group_scope import _binomial_runs, binomial_world

    mean, theta, a, _, _ = binomial_world()
    realised = np.mean((theta - mean) ** 2 / (mean * (1 - mean)), 0)
    _, _, a_hat, covered, width, dt = _binomial_runs("factor_binomial", reps=10)
    # the cell's A over m(1-m) is a_l c_g: its mean over LLMs follows this world's a_g
    assert np.corrcoef(np.log(a_hat.mean(0)), np.log(realised))[0, 1] > 0.9
    assert covered.mean() >= 0.93, covered.mean()  # 0.975 over 10 x 960 cells
    assert covered.mean((0, 1)).min() >= 0.90, covered.mean((0, 1))  # 0.936 in the worst subgroup
    assert covered[:, np.abs(mean - 0.5) < 0.2].mean() >= 0.93  # the mid-range LLMs too
    assert width.mean() < np.mean(dt.upper_ - dt.lower_)
