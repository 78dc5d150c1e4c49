"""The unequal-probability (piPS) design and its Horvitz-Thompson difference estimator, by simulation."""
import numpy as np
import pytest

from assessors.errors import ConfigError
from assessors.estimation.benchmark.aipw import AIPW
from assessors.estimation.benchmark.latent_proxy import LatentProxy
from assessors.estimation.benchmark.pps import PPSAIPW, inclusion_probabilities, pareto_sample
from tests.estimation.conftest import simulate
from tests.estimation.test_estimators import _trials
from tests.estimation.test_latent_estimators import design_errors


@pytest.fixture(scope="module")
def sim():
    S, _ = simulate(n_llms=80, n_items=600, seed=1)
    return S


def test_inclusion_probabilities_sum_to_n_capped_at_one():
    size = np.array([100.0, 1, 1, 2, 2, 4])
    pi = inclusion_probabilities(size, 3)
    assert pi.sum() == pytest.approx(3) and pi[0] == 1.0
    np.testing.assert_allclose(pi[1:] / pi[1], size[1:] / size[1])  # the rest stay proportional


def test_pareto_sample_has_fixed_size_and_its_inclusion_frequencies():
    rng = np.random.default_rng(0)
    pi = inclusion_probabilities(rng.gamma(2.0, size=200) + 0.2, 20)
    hits = np.zeros(200)
    for _ in range(4000):
        s = pareto_sample(pi, 20, rng)
        assert s.size == 20 and np.unique(s).size == 20
        hits[s] += 1
    freq = hits / 4000
    se = np.sqrt(pi * (1 - pi) / 4000) + 1e-9
    assert np.abs((freq - pi) / se).mean() < 1.5  # O(1/n) deviations only: within noise on average
    assert np.abs(freq - pi).max() < 0.03


@pytest.mark.parametrize("weighting", ["ht", "hajek"])
def test_uniform_design_gives_aipw_exactly(sim, weighting):
    est = PPSAIPW(proxy=LatentProxy(dims=3), uniform_share=1.0, folds=1, core_size=50, seed=3,
                  weighting=weighting).fit(sim[:60])
    np.testing.assert_allclose(est.inclusion_, 50 / 600)
    ref = AIPW(proxy=LatentProxy(dims=3), folds=1, core_size=50).fit(sim[:60], core_index=est.core_index_)
    Y = sim[60:, est.core_index_]
    a, b = est.estimate(Y), ref.estimate(Y)
    for x, y in [(a.point, b.point), (a.ci_low, b.ci_low), (a.ci_high, b.ci_high)]:
        np.testing.assert_allclose(x, y, atol=1e-12)


def test_estimator_is_design_unbiased_with_a_fixed_proxy():
    # up to Pareto sampling's O(1/n) error in the inclusion probabilities
    S, _ = simulate(n_llms=45, n_items=80, seed=4)
    est = PPSAIPW(proxy=LatentProxy(dims=2), folds=1, power_tuning=False, core_size=12, uniform_share=0.1)
    err = design_errors(est, S, 40, 500)
    assert abs(err.mean()) < 3 * err.std(ddof=1) / np.sqrt(err.size), err.mean()


@pytest.mark.parametrize("uniform_share, weighting", [(0.0, "ht"), (0.25, "ht"), (0.25, "hajek")])
def test_pps_design_is_unbiased_and_covers(sim, uniform_share, weighting):
    est = PPSAIPW(proxy=LatentProxy(dims=3), uniform_share=uniform_share, weighting=weighting)
    err, cover, _ = _trials(est, sim, 60, 50, range(120))
    trial_err = err.mean(1)
    assert abs(trial_err.mean()) < 3 * trial_err.std(ddof=1) / np.sqrt(trial_err.size), trial_err.mean()
    assert 0.93 <= cover.mean() <= 0.97, cover.mean()
    assert est.core_index_.size == 50 and est.inclusion_.sum() == pytest.approx(50)


def test_pps_bad_configuration(sim):
    from assessors.estimation.benchmark.proxy import RidgeProxy

    with pytest.raises(ConfigError, match="LatentProxy"):
        PPSAIPW(proxy=[RidgeProxy()]).fit(sim[:60])
    with pytest.raises(ConfigError, match="uniform_share"):
        PPSAIPW(proxy=LatentProxy(dims=2), uniform_share=1.5).fit(sim[:60])
    with pytest.raises(ConfigError, match="weighting"):
        PPSAIPW(proxy=LatentProxy(dims=2), weighting="x").fit(sim[:60])
