"""The latent posterior as an estimation proxy and as a model-based estimate, tested by simulation
from the latent model (multidimensional 2PL: P = sigmoid(theta . a - b))."""
import numpy as np
import pytest

from assessors.errors import ConfigError, DataError
from assessors.estimation.benchmark.aipw import AIPW
from assessors.estimation.benchmark.latent_model import LatentModel
from assessors.estimation.benchmark.latent_proxy import LatentProxy
from assessors.estimation.benchmark.pps import PPSAIPW
from assessors.estimation.benchmark.random_sampling import RandomSampling
from tests.estimation.conftest import simulate
from tests.estimation.test_estimators import _trials


@pytest.fixture(scope="module")
def sim():
    S, _ = simulate(n_llms=80, n_items=600, seed=1)
    return S


def test_aipw_latent_is_unbiased_covers_and_beats_random_sampling(sim):
    err, cover, width = _trials(AIPW(proxy=LatentProxy(dims=3)), sim, 60, 50, range(120))
    # the estimand is each target's realised accuracy; the randomness is the core draw
    trial_err = err.mean(1)
    assert abs(trial_err.mean()) < 3 * trial_err.std(ddof=1) / np.sqrt(trial_err.size), trial_err.mean()
    se = err.std(0, ddof=1) / np.sqrt(err.shape[0])
    assert np.all(np.abs(err.mean(0)) < 4 * se + 1e-3)  # every target (20 comparisons)
    assert 0.93 <= cover.mean() <= 0.98, cover.mean()
    rs_err, _, rs_width = _trials(RandomSampling(), sim, 60, 50, range(120))
    assert np.abs(err).mean() < 0.95 * np.abs(rs_err).mean()
    assert width.mean() < rs_width.mean()


def test_cross_fitting_hides_each_core_answer_from_its_own_prediction(sim):
    est = AIPW(proxy=LatentProxy(dims=3), folds=5, core_size=50, seed=0).fit(sim[:60])
    Y = sim[60:, est.core_index_].astype(float)
    f_lab, _ = est.proxy_predictions(Y)
    flipped = Y.copy()
    j = 7
    flipped[:, j] = 1 - flipped[:, j]
    f_flip, _ = est.proxy_predictions(flipped)
    np.testing.assert_allclose(f_flip[:, j], f_lab[:, j])  # its own prediction ignores its answer
    same_fold = est.fold_ == est.fold_[j]
    assert not np.allclose(f_flip[:, ~same_fold], f_lab[:, ~same_fold])  # the other folds use it


@pytest.mark.parametrize("band", ["analytic", "sampled"])
def test_model_band_covers_when_the_model_is_true(band):
    # true item parameters and prior plugged in: the posterior-predictive band of the realised
    # accuracy must cover it at the nominal rate over targets drawn from the prior
    rng = np.random.default_rng(3)
    n_items, D, k = 500, 2, 400
    a = rng.normal(0.6, 0.5, size=(n_items, D))
    b = rng.normal(0, 1.5, size=n_items)
    theta = rng.normal(size=(k + 30, D))
    P = 1 / (1 + np.exp(-(theta @ a.T - b)))
    S = (rng.random(P.shape) < P).astype(float)
    est = LatentModel(proxy=LatentProxy(dims=D), core_size=40, seed=0, band=band).fit(S[:30])
    from assessors.core.posterior import GaussianPrior

    est.proxy_.discrimination_, est.proxy_.difficulty_ = a, b
    est.proxy_.prior_ = GaussianPrior(np.zeros(D), np.eye(D))
    tgt = S[30:]
    out = est.estimate(tgt[:, est.core_index_])
    truth = tgt.mean(1)
    cover = (out.ci_low <= truth) & (truth <= out.ci_high)
    assert 0.92 <= cover.mean() <= 0.98, cover.mean()
    assert abs((out.point - truth).mean()) < 3 * (out.point - truth).std() / np.sqrt(k)


def test_analytic_band_agrees_with_the_sampled_one(sim):
    # the delta-method band is an approximation of the sampled one: same centre, similar width
    kw = dict(proxy=LatentProxy(dims=3), core_size=30, seed=0)
    a = LatentModel(band="analytic", **kw).fit(sim[:60])
    s = LatentModel(band="sampled", n_samples=4000, **kw).fit(sim[:60])
    Y = sim[60:, a.core_index_]
    oa, os_ = a.estimate(Y), s.estimate(Y)
    assert np.abs(oa.point - os_.point).max() < 0.01
    ratio = (oa.ci_high - oa.ci_low) / (os_.ci_high - os_.ci_low)
    assert 0.85 < np.median(ratio) < 1.2, np.median(ratio)
    with pytest.raises(ConfigError, match="band"):
        LatentModel(band="exact", **kw).fit(sim[:60])


def test_model_estimate_counts_observed_core_answers_exactly(sim):
    est = LatentModel(proxy=LatentProxy(dims=3), core_size=600, seed=0).fit(sim[:60])
    out = est.estimate(sim[60:62, est.core_index_])
    np.testing.assert_allclose(out.point, sim[60:62].mean(1))
    np.testing.assert_allclose(out.ci_low, out.ci_high)


def test_item_fit_is_shared_across_trials_of_one_source_split(sim):
    a = AIPW(proxy=LatentProxy(dims=3), seed=0, core_size=25).fit(sim[:60])
    b = AIPW(proxy=LatentProxy(dims=3), seed=1, core_size=50).fit(sim[:60])
    assert a.proxy_.discrimination_ is b.proxy_.discrimination_


@pytest.mark.parametrize("est", [AIPW(proxy=LatentProxy(dims=2)), LatentModel(proxy=LatentProxy(dims=2)),
                                 PPSAIPW(proxy=LatentProxy(dims=2))], ids=["aipw_latent", "latent_model", "pps"])
def test_bad_input(est, sim):
    with pytest.raises(ConfigError, match="core_size"):
        est.set_params(core_size=601).fit(sim[:60])
    with pytest.raises(ConfigError, match="core set"):
        est.set_params(core_size=50).fit(sim[:60], core_index=np.arange(601) % 600)
    est.set_params(core_size=30, seed=0).fit(sim[:60])
    with pytest.raises(DataError, match="no evaluated core item"):
        est.estimate(np.full((1, 30), np.nan))
    with pytest.raises(DataError, match="0, 1 or missing"):
        est.estimate(np.full((1, 30), 0.5))
    # all answers equal: marked, and the interval is not a confident one
    out = est.estimate(np.vstack([np.zeros(30), np.ones(30), sim[60, est.core_index_]]))
    assert list(out.evidence) == ["one_class", "one_class", "ok"]
    q = 0.025 ** (1 / 30)  # Clopper-Pearson bounds of an unseen item's success after 30 equal answers
    if isinstance(est, AIPW):  # design-based: at least the exact interval of the unseen items
        assert out.ci_high[0] >= 570 * (1 - q) / 600 - 1e-12 and out.ci_low[1] <= (30 + 570 * q) / 600 + 1e-12
    assert np.all(out.ci_high[:2] - out.ci_low[:2] > 0.02)


def test_neyman_allocation_respects_bounds_and_follows_spread():
    from assessors.estimation.benchmark.stratified import allocate

    n_h = allocate(50, np.array([100, 100, 100, 100, 3]), np.array([0.05, 0.5, 0.5, 0.2, 0.5]), 2)
    assert n_h.sum() == 50 and n_h.min() >= 2 and n_h[4] <= 3
    assert n_h[1] > n_h[3] > n_h[0]
    np.testing.assert_array_equal(allocate(10, np.array([2, 3, 5]), np.ones(3), 2), [2, 3, 5])


@pytest.mark.parametrize("allocation, proxies", [("neyman", 1), ("proportional", 1), ("neyman", 2)],
                         ids=["neyman", "proportional", "neyman_latent_ridge"])
def test_stratified_design_is_unbiased_and_covers(sim, allocation, proxies):
    from assessors.estimation.benchmark.proxy import RidgeProxy
    from assessors.estimation.benchmark.stratified import StratifiedAIPW

    proxy = LatentProxy(dims=3) if proxies == 1 else [LatentProxy(dims=3), RidgeProxy()]
    est = StratifiedAIPW(proxy=proxy, allocation=allocation)
    err, cover, _ = _trials(est, sim, 60, 50, range(120))
    trial_err = err.mean(1)
    assert abs(trial_err.mean()) < 3 * trial_err.std(ddof=1) / np.sqrt(trial_err.size), trial_err.mean()
    assert 0.93 <= cover.mean() <= 0.97, cover.mean()
    core_strata = np.bincount(est.stratum_[est.core_index_])
    assert core_strata.sum() == 50 and core_strata.min() >= 2


def design_errors(est, S, n_src, draws):
    """Mean error over targets of ``est`` per core draw (draws,), its proxy frozen: fitted on the
    sources and shown no answer, so it is the same for every draw and the expectation over the
    design's draws is the truth for a design-unbiased estimator (one fold, lam = 1)."""
    truth = S[n_src:].mean(1)
    err = []
    for seed in range(draws):
        est.set_params(seed=seed).fit(S[:n_src])
        f_fixed = est.proxy_.predict(np.full((S.shape[0] - n_src, est.core_size), np.nan))
        est.proxy_.predict = lambda _Y, f=f_fixed: f[: len(_Y)]
        err.append(est.estimate(S[n_src:, est.core_index_]).point - truth)
    return np.array(err).mean(1)


def test_stratified_difference_estimator_is_exactly_design_unbiased():
    from assessors.estimation.benchmark.stratified import StratifiedAIPW

    S, _ = simulate(n_llms=45, n_items=60, seed=4)
    est = StratifiedAIPW(proxy=LatentProxy(dims=2), folds=1, power_tuning=False, strata=3, core_size=9)
    err = design_errors(est, S, 40, 400)
    assert abs(err.mean()) < 3 * err.std(ddof=1) / np.sqrt(err.size), err.mean()


def test_combined_proxies_are_unbiased_cover_and_beat_each_proxy_alone(sim):
    from assessors.estimation.benchmark.proxy import RidgeProxy

    seeds = range(120)
    err, cover, width = _trials(AIPW(proxy=[LatentProxy(dims=3), RidgeProxy()]), sim, 60, 50, seeds)
    trial_err = err.mean(1)
    assert abs(trial_err.mean()) < 3 * trial_err.std(ddof=1) / np.sqrt(trial_err.size), trial_err.mean()
    assert 0.93 <= cover.mean() <= 0.97, cover.mean()
    rs_err, _, _ = _trials(RandomSampling(), sim, 60, 50, seeds)
    ridge_err, _, _ = _trials(AIPW(proxy=RidgeProxy()), sim, 60, 50, seeds)
    assert np.abs(err).mean() < 0.95 * np.abs(rs_err).mean()
    assert np.abs(err).mean() < 1.05 * np.abs(ridge_err).mean()  # the combination loses little to its parts


def test_combination_weights_recover_a_nonnegative_mix_and_skip_equal_answers():
    from assessors.estimation.benchmark.aipw import combination_weights

    rng = np.random.default_rng(0)
    F = rng.random((2, 3, 400))
    Y = 0.1 + 0.7 * F[0] + 0.2 * F[1] + rng.normal(0, 0.01, (3, 400))
    Y[1] = 0.3 - 0.5 * F[1, 1]  # a negative weight is clipped to 0
    Y[2] = 1.0
    Y[0, :5] = np.nan
    W = combination_weights(Y, F)
    np.testing.assert_allclose(W[0], [0.7, 0.2], atol=0.01)
    assert W[1, 1] == 0.0 and W[1, 0] < 0.05
    np.testing.assert_array_equal(W[2], 0.0)


def test_stratified_design_needs_a_latent_design_model(sim):
    from assessors.estimation.benchmark.proxy import RidgeProxy
    from assessors.estimation.benchmark.stratified import StratifiedAIPW

    with pytest.raises(ConfigError, match="LatentProxy"):
        StratifiedAIPW(proxy=[RidgeProxy()]).fit(sim[:60])
    with pytest.raises(ConfigError, match="pseudo_share"):
        StratifiedAIPW(proxy=LatentProxy(dims=2), pseudo_share="x").fit(sim[:60])


def _latent_model_coverage(band, skills, fit_dims, splits=3, trials=3, n_items=1500):
    """Coverage of ``latent_model`` bands over interpolation splits of simulated LLMs (75 sources,
    25 targets, n = 50) with two abilities: with ``skills``, each item needs one of them only (a
    truth the 1-D model cannot express), else every item loads on both (a 2-D latent model)."""
    cover = []
    for split in range(splits):
        rng = np.random.default_rng(split)
        theta = rng.normal(size=(100, 2))
        a = np.abs(rng.normal(1.0, 0.3, size=(n_items, 2)))
        if skills:
            a[: n_items // 2, 1] = 0
            a[n_items // 2:, 0] = 0
        P = 1 / (1 + np.exp(-(theta @ a.T - rng.normal(0, 1.5, size=n_items))))
        S = (rng.random(P.shape) < P).astype(float)
        src, tgt = S[:75], S[75:]
        for trial in range(trials):
            est = LatentModel(proxy=LatentProxy(dims=fit_dims), core_size=50, seed=trial, band=band).fit(src)
            out = est.estimate(tgt[:, est.core_index_])
            cover.append((out.ci_low <= tgt.mean(1)) & (tgt.mean(1) <= out.ci_high))
    return np.mean(cover)


@pytest.mark.slow
def test_calibrated_band_covers_a_misspecified_model_where_the_posterior_band_does_not():
    # two separate skills fitted by a 1-D model: the posterior band alone claims far too much
    assert _latent_model_coverage("analytic", True, 1) < 0.7
    assert 0.93 <= _latent_model_coverage("calibrated", True, 1) <= 0.99


@pytest.mark.slow
def test_calibrated_band_does_not_over_cover_much_when_the_model_is_true():
    assert 0.93 <= _latent_model_coverage("calibrated", False, 2) <= 0.99


def test_conformal_quantile_covers_a_new_exchangeable_score():
    from assessors.estimation.benchmark.latent_model import conformal_quantile

    rng = np.random.default_rng(0)
    scores = rng.exponential(size=(4000, 20))
    q = np.array([conformal_quantile(s[:19], 0.1) for s in scores])
    hit = (scores[:, 19] <= q).mean()  # 1 - alpha <= P(hit) = 18/20 exactly for continuous scores
    assert abs(hit - 0.9) < 3 * np.sqrt(0.09 / 4000), hit
    assert conformal_quantile(np.arange(5.0), 0.1) == np.inf  # rank 6 of 5: no finite bound
    assert conformal_quantile(np.arange(19.0), 0.1) == 17.0


def test_calibration_refits_once_per_source_split(sim, monkeypatch):
    from assessors.selection.irt import MultidimIRT

    calls = []
    fit = MultidimIRT.fit
    monkeypatch.setattr(MultidimIRT, "fit", lambda self, S: calls.append(S.shape) or fit(self, S))
    src = sim[:57]  # a split no other test fits
    a = LatentModel(proxy=LatentProxy(dims=2), core_size=30, seed=0, calibration_folds=4).fit(src)
    b = LatentModel(proxy=LatentProxy(dims=2), core_size=50, seed=1, calibration_folds=4).fit(src)
    assert len(calls) == 5  # the full fit and one per fold, shared by the second trial
    assert a.source_score_.shape == (57,) and np.all(np.isfinite(b.source_score_))
    far = a._calibrated_scale(np.array([2.0]))  # nearest sources: the strongest ones
    near = LatentModel(proxy=LatentProxy(dims=2), core_size=30, seed=0, calibration_folds=4,
                       calibration_neighbours=19).fit(src)
    top = np.argsort(near.source_point_)[-19:]
    assert near._calibrated_scale(np.array([2.0]))[0] == np.sort(near.source_score_[top])[-1]
    assert np.isfinite(far).all()
    with pytest.raises(ConfigError, match="calibration_neighbours"):
        LatentModel(proxy=LatentProxy(dims=2), calibration_neighbours=18).fit(src)
    with pytest.raises(ConfigError, match="calibration_folds"):
        LatentModel(proxy=LatentProxy(dims=2), calibration_folds=1).fit(src)
