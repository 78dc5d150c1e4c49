"""Simulation tests: unbiasedness and CI coverage on data with known truth, plus bad inputs."""
import numpy as np
import pytest

from assessors.errors import ConfigError, DataError
from assessors.estimation.benchmark.aipw import AIPW
from assessors.estimation.benchmark.anchor_points import AnchorPoints
from assessors.estimation.benchmark.irt import TinyBenchmarksIRT
from assessors.estimation.benchmark.lasso import LassoCore
from assessors.estimation.benchmark.base import impute_columns
from assessors.estimation.benchmark.pca import PCAImpute
from assessors.estimation.benchmark.random_sampling import RandomSampling
from assessors.estimation.benchmark.random_sampling_learn import RandomSamplingLearn
from tests.estimation.conftest import simulate


def _trials(est, S, n_src, core_size, seeds):
    src, tgt = S[:n_src], S[n_src:]
    truth = tgt.mean(1)
    err, cover, width = [], [], []
    for seed in seeds:
        est.set_params(seed=seed, core_size=core_size).fit(src)
        out = est.estimate(tgt[:, est.core_index_])
        err.append(out.point - truth)
        if out.ci_low is not None:
            cover.append((out.ci_low <= truth) & (truth <= out.ci_high))
            width.append(out.ci_high - out.ci_low)
    return np.array(err), np.array(cover), np.array(width)


@pytest.mark.parametrize("est", [RandomSampling(), AIPW()], ids=["random_sampling", "aipw"])
@pytest.mark.parametrize("core_size, n_items", [(40, 400), (200, 300)])
def test_unbiased_and_covers(est, core_size, n_items):
    S, _ = simulate(n_llms=50, n_items=n_items, seed=1)
    err, cover, width = _trials(est, S, 40, core_size, range(150))
    # bias of the mean error over 150 independent core draws, per target and overall
    se = err.std(0, ddof=1) / np.sqrt(err.shape[0])
    assert np.all(np.abs(err.mean(0)) < 4 * se + 1e-3), (err.mean(0), se)
    assert abs(err.mean()) < 0.01
    assert cover.mean() >= 0.93, cover.mean()
    assert width.mean() < 0.35


def _extreme_targets(seed=11):
    """40 sources, 20 targets of which most sit near 0% or 100% accuracy (threshold shifted by +-4)."""
    rng = np.random.default_rng(seed)
    th = rng.normal(size=(60, 2))
    th[40:, 0] += rng.choice([-4, 4], size=20)
    a = rng.normal(0.8, 0.3, size=(400, 2))
    b = rng.normal(0, 1.5, size=400)
    p = 1 / (1 + np.exp(-(th @ a.T - b)))
    return (rng.random(p.shape) < p).astype(np.float32)


def test_aipw_small_core_covers_extreme_accuracies():
    # at n=25 a near-0/1 target often has all-equal answers, so constant residuals and a Wald
    # interval of zero width; the exact one-class bounds alone, and with the pseudo-count
    # variance, must restore nominal coverage
    S = _extreme_targets()
    _, cov_wald, _ = _trials(AIPW(pseudo_counts=0), S, 40, 25, range(150))
    err, cov, width = _trials(AIPW(), S, 40, 25, range(150))
    assert cov_wald.mean() >= 0.93, cov_wald.mean()
    assert cov.mean() >= 0.93, cov.mean()
    assert abs(err.mean()) < 0.01 and width.mean() < 0.3


def test_aipw_beats_random_sampling_with_a_good_proxy():
    # items strongly structured: the ridge proxy should cut the error of the plain mean
    S, _ = simulate(n_llms=80, n_items=600, dims=1, seed=2)
    e_rs, _, w_rs = _trials(RandomSampling(), S, 60, 50, range(40))
    e_ai, _, w_ai = _trials(AIPW(), S, 60, 50, range(40))
    assert np.abs(e_ai).mean() < np.abs(e_rs).mean()
    assert w_ai.mean() < w_rs.mean()


def test_aipw_ppi_py_agrees_when_core_is_small_share():
    S, _ = simulate(n_llms=50, n_items=2000, seed=3)
    a = AIPW(seed=0, core_size=40).fit(S[:40])
    b = AIPW(seed=0, core_size=40, inference="ppi_py").fit(S[:40])
    Y = S[40:, a.core_index_]
    pa, pb = a.estimate(Y), b.estimate(Y)
    assert np.abs(pa.point - pb.point).max() < 0.03
    wa, wb = pa.ci_high - pa.ci_low, pb.ci_high - pb.ci_low
    assert np.all(np.abs(wa / wb - 1) < 0.35)


def test_random_sampling_wilson_interval_matches_known_value():
    # 5 of 10 observed core cells; the unobserved (NaN) cells count in neither k nor n
    Y = np.array([[1, 0] * 5 + [np.nan] * 3])
    est = RandomSampling()._estimate(Y)
    assert est.point[0] == 0.5
    assert est.ci_low[0] == pytest.approx(0.2366, abs=1e-3) and est.ci_high[0] == pytest.approx(0.7634, abs=1e-3)


@pytest.mark.parametrize("est", [
    RandomSamplingLearn(), PCAImpute(), LassoCore(), AnchorPoints(variant="predictor"),
    TinyBenchmarksIRT(variant="pirt", dims=2), TinyBenchmarksIRT(dims=2),
], ids=["rs_learn", "pca", "lasso", "anchor_p", "pirt", "gpirt"])
def test_learned_estimators_beat_random_sampling_on_interpolation(est):
    S, _ = simulate(n_llms=70, n_items=300, dims=2, seed=4)
    e_rs, *_ = _trials(RandomSampling(), S, 55, 30, range(3))
    e, *_ = _trials(est, S, 55, 30, range(3))
    assert len(est.core_index_) <= 30
    assert np.abs(e).mean() < np.abs(e_rs).mean() * 1.1, (np.abs(e).mean(), np.abs(e_rs).mean())


def test_anchor_weights_partition_the_benchmark():
    # weighted anchor points is not expected to beat random sampling (it does not in the paper
    # either); check its mechanics: cluster weights sum to 1 and the estimate is their average
    S, _ = simulate(n_llms=40, n_items=300, seed=7)
    est = AnchorPoints(core_size=20, seed=0).fit(S[:30])
    assert est.weights_.sum() == pytest.approx(1.0)
    assert np.all(est.weights_ > 0)
    Y = S[30:, est.core_index_]
    np.testing.assert_allclose(est.estimate(Y).point, Y @ est.weights_)


def test_anchor_search_on_an_item_sample_assigns_every_item():
    # above max_items the medoids come from a seeded item sample; every item still joins one, and a
    # benchmark within max_items gets the search over all items, exactly as with max_items=None
    S, _ = simulate(n_llms=40, n_items=300, seed=7)
    for variant in ("weighted", "predictor"):
        full = AnchorPoints(core_size=20, seed=0, variant=variant, max_items=None).fit(S[:30])
        same = AnchorPoints(core_size=20, seed=0, variant=variant, max_items=300).fit(S[:30])
        np.testing.assert_array_equal(full.core_index_, same.core_index_)
        np.testing.assert_allclose(full.estimate(S[30:, full.core_index_]).point,
                                   same.estimate(S[30:, same.core_index_]).point)
    a = AnchorPoints(core_size=20, seed=0, max_items=100).fit(S[:30])
    b = AnchorPoints(core_size=20, seed=1, max_items=100).fit(S[:30])
    assert a.weights_.sum() == pytest.approx(1.0) and np.all(a.weights_ > 0)
    assert not np.array_equal(a.core_index_, b.core_index_)  # the sample follows the seed
    Y = S[30:, a.core_index_]
    np.testing.assert_allclose(a.estimate(Y).point, Y @ a.weights_)
    from assessors.estimation.benchmark.anchor_points import item_correlations

    corr = item_correlations(S[:30])
    raw = AnchorPoints(core_size=20, seed=0, max_items=100, refine_iter=0).fit(S[:30])
    loss = {e: (1 - corr[e.core_index_]).min(0).sum() for e in (a, raw)}
    assert loss[a] <= loss[raw] + 1e-3  # the steps over all items never raise the k-medoids loss
    p = AnchorPoints(core_size=20, seed=0, variant="predictor", max_items=100).fit(S[:30])
    assert p.floaters_.size == 300 - p.core_index_.size
    with pytest.raises(ConfigError, match="max_items"):
        AnchorPoints(core_size=20, max_items=10).fit(S[:30])


def test_irt_fits_are_shared_by_trials_on_one_source_split():
    S, _ = simulate(n_llms=40, n_items=120, seed=2)
    a = TinyBenchmarksIRT(core_size=10, seed=0, dims=2).fit(S[:30])
    b = TinyBenchmarksIRT(core_size=10, seed=1, dims=2).fit(S[:30])
    assert a.irt_ is b.irt_ and a.lam_ == b.lam_  # one fit for the split, whatever the trial seed
    c = TinyBenchmarksIRT(core_size=10, seed=1, dims=2, irt_seed=None).fit(S[:30])
    assert c.irt_ is not a.irt_ and c.irt_.seed == 1
    # p-IRT reuses gp-IRT's anchors (same fit, size and seed): the same core and weights, computed once
    from assessors.estimation.benchmark import base

    base._CACHE.clear()
    gp = TinyBenchmarksIRT(core_size=10, seed=3, dims=2).fit(S[:30])
    n_cached = len(base._CACHE)
    p = TinyBenchmarksIRT(core_size=10, seed=3, dims=2, variant="pirt").fit(S[:30])
    assert len(base._CACHE) == n_cached and p.core_index_ is gp.core_index_
    np.testing.assert_array_equal(p.anchor_weights_, gp.anchor_weights_)
    other = TinyBenchmarksIRT(core_size=10, seed=4, dims=2, variant="pirt").fit(S[:30])  # another k-means seed
    assert len(base._CACHE) == n_cached + 1 and other.irt_ is gp.irt_


@pytest.mark.parametrize("make", [
    lambda **kw: TinyBenchmarksIRT(dims=2, variant="pirt", **kw),
    lambda **kw: AnchorPoints(max_items=100, **kw),
    lambda **kw: AnchorPoints(variant="predictor", **kw),
], ids=["pirt", "anchor_sample", "anchor_predictor"])
def test_a_fixed_core_seed_selects_one_core_per_source_split(make):
    # core_seed fixed: the trials of one source split share one search (cached), whatever their seed;
    # None keeps a search per trial seed, the same as before for seed 0
    from assessors.estimation.benchmark import base

    S, _ = simulate(n_llms=40, n_items=300, seed=7)
    base._CACHE.clear()
    a = make(core_size=20, seed=0, core_seed=5).fit(S[:30])
    n_cached = len(base._CACHE)
    b = make(core_size=20, seed=1, core_seed=5).fit(S[:30])
    assert len(base._CACHE) == n_cached and b.core_index_ is a.core_index_
    np.testing.assert_allclose(a.estimate(S[30:, a.core_index_]).point, b.estimate(S[30:, b.core_index_]).point)
    trial = make(core_size=20, seed=5).fit(S[:30])
    np.testing.assert_array_equal(trial.core_index_, a.core_index_)  # core_seed 5 is trial seed 5's search
    other = make(core_size=20, seed=1).fit(S[:30])
    assert not np.array_equal(other.core_index_, a.core_index_)


def test_pca_takes_one_svd_per_rank_search_and_one_per_source_split(monkeypatch):
    from assessors.estimation.benchmark import base, pca

    S, _ = simulate(n_llms=60, n_items=150, seed=6)
    svds, real = [], pca._svd
    monkeypatch.setattr(pca, "_svd", lambda X: svds.append(X.shape) or real(X))
    base._CACHE.clear()
    fits = [PCAImpute(core_size=size, seed=seed).fit(S[:45]) for size, seed in ((20, 0), (40, 1))]
    assert svds == [(33, 150), (45, 150), (33, 150)]  # the rank search's 75% of sources; the split once
    for est in fits:  # the components are the leading axes of the sources' SVD, at the chosen rank
        mu, vt = real(impute_columns(S[:45]))
        np.testing.assert_array_equal(est.V_, vt[:est.n_components_].T)
        np.testing.assert_array_equal(est.mu_, mu)


def test_item_correlations_are_pearson_in_single_precision():
    from assessors.estimation.benchmark.anchor_points import item_correlations

    S, _ = simulate(n_llms=40, n_items=60, seed=3)
    S = S.copy()
    S[:, 5] = 1.0  # a constant item correlates 0 with every other
    c = item_correlations(S)
    with np.errstate(divide="ignore", invalid="ignore"):
        ref = np.nan_to_num(np.corrcoef(S, rowvar=False), nan=0.0)
    np.fill_diagonal(ref, 1.0)
    assert c.dtype == np.float32
    np.testing.assert_allclose(c, ref, atol=1e-5)


def test_missing_cells_are_handled():
    S, _ = simulate(n_llms=40, n_items=200, seed=5)
    S = S.copy()
    S[np.random.default_rng(0).random(S.shape) < 0.05] = np.nan
    for est in (RandomSampling(core_size=30), AIPW(core_size=30), PCAImpute(core_size=30), AnchorPoints(core_size=20)):
        est.fit(S[:30])
        out = est.estimate(S[30:, est.core_index_])
        assert np.isfinite(out.point).all()


def test_bad_inputs_have_clear_errors():
    S, _ = simulate(n_llms=20, n_items=60, seed=6)
    names = [f"llm{i}" for i in range(20)]
    with pytest.raises(ConfigError, match="core_size=100 but the benchmark has 60 items"):
        RandomSampling(core_size=100).fit(S[:15])
    with pytest.raises(ConfigError, match="selects its own core"):
        AnchorPoints(core_size=5).fit(S[:15], core_index=[0, 1, 2, 3, 4])
    est = RandomSampling(core_size=10).fit(S[:15], source_llms=names[:15])
    with pytest.raises(DataError, match="also source LLMs"):
        est.estimate(S[14:16, est.core_index_], target_llms=names[14:16])
    Y = S[15:, est.core_index_].copy()
    Y[1] = np.nan
    with pytest.raises(DataError, match=r"target rows \['llm16'\]"):
        est.estimate(Y, target_llms=names[15:])
    bad = S[:15].copy()
    bad[2] = np.nan
    with pytest.raises(DataError, match=r"source LLM rows \['llm2'\]"):
        RandomSampling(core_size=10).fit(bad, source_llms=names[:15])
    with pytest.raises(DataError, match="core set has 10 items"):
        est.estimate(S[15:, :5])


def test_aipw_with_generic_assessor_proxy_is_unbiased_and_covers():
    """conf/estimator/aipw_assessor.yaml: the generic assessor as AIPW's proxy (data without text)."""
    from pathlib import Path

    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    node = OmegaConf.load(Path(__file__).resolve().parents[2] / "conf/estimator/aipw_assessor.yaml")
    node.seed = 0
    node.proxy.assessor.classifier.estimator.n_estimators = 30
    est = instantiate(node)
    S, _ = simulate(n_llms=40, n_items=300, dims=1, seed=8)
    err, cover, _ = _trials(est, S, 30, 40, range(12))
    assert abs(err.mean()) < 0.02, err.mean()
    assert cover.mean() >= 0.85, cover.mean()  # 12 trials x 10 targets: loose but can fail


def test_generic_proxy_caps_training_pairs_and_compresses_patterns():
    from sklearn.linear_model import LogisticRegression

    from assessors.classifiers.grid import ParamGrid
    from assessors.core.generic import GenericAssessor
    from assessors.estimation.benchmark.generic_proxy import GenericAssessorProxy

    def logreg():
        return GenericAssessor(ParamGrid(LogisticRegression(max_iter=500)))

    S, _ = simulate(n_llms=60, n_items=200, dims=2, seed=3)
    core = np.arange(0, 200, 10)
    proxy = GenericAssessorProxy(logreg(), max_pairs=3000,
                                 pattern_dims=8, min_llms=5, seed=1).fit(S[:50], None, core)
    assert len(proxy.train_llms_) == 15 and proxy.X_.shape == (200, 8)  # 3000 // 200 LLMs, 8 SVD dims
    p = proxy.predict(S[50:, core])
    assert p.shape == (10, 200) and np.all((p >= 0) & (p <= 1))
    # the compressed proxy still ranks items: mean AUC over held-out LLMs well above chance
    from sklearn.metrics import roc_auc_score
    auc = np.mean([roc_auc_score(S[50 + i], p[i]) for i in range(10) if 0 < S[50 + i].mean() < 1])
    assert auc > 0.7, auc
    few = GenericAssessorProxy(logreg(), max_pairs=1000, min_llms=5, seed=1).fit(S[:50], None, core)
    assert len(few.train_llms_) == 5 and len(few.train_items_) == 200  # 5 x 200 = 1000 pairs
    assert np.isin(core, few.train_items_).all()
    tiny = GenericAssessorProxy(logreg(), max_pairs=500, min_llms=5, seed=1).fit(S[:50], None, core)
    assert len(tiny.train_items_) == 100 and np.isin(core, tiny.train_items_).all()
    assert tiny.predict(S[50:, core]).shape == (10, 200)
    # missing cells: AIPW hands this proxy the raw matrix (NaN), not the mean-imputed one
    from assessors.estimation.benchmark.aipw import AIPW

    S_nan = S.copy()
    S_nan[np.random.default_rng(0).random(S.shape) < 0.05] = np.nan
    est = AIPW(core_size=20, proxy=GenericAssessorProxy(logreg(), pattern_dims=8)).fit(S_nan[:50])
    out = est.estimate(S_nan[50:][:, est.core_index_])
    assert np.all(np.isfinite(out.point))
    full = GenericAssessorProxy(logreg()).fit(S[:50], None, core)
    assert len(full.train_llms_) == 50 and full.X_.shape == (200, 50)


def test_generic_proxy_computes_the_item_patterns_once_per_source_split(monkeypatch):
    from sklearn.linear_model import LogisticRegression

    from assessors.classifiers.grid import ParamGrid
    from assessors.core.generic import GenericAssessor
    from assessors.estimation.benchmark import base, generic_proxy

    S, _ = simulate(n_llms=60, n_items=200, dims=2, seed=5)
    from sklearn.base import clone

    svds, real = [], generic_proxy._compressed
    monkeypatch.setattr(generic_proxy, "_compressed", lambda *a: svds.append(1) or real(*a))
    base._CACHE.clear()
    proxy = generic_proxy.GenericAssessorProxy(GenericAssessor(ParamGrid(LogisticRegression(max_iter=500))),
                                               pattern_dims=8)
    fits = [clone(proxy).fit(src, None, core) for src, core in
            ((S[:50], np.arange(0, 200, 10)), (S[:50], np.arange(5, 200, 7)), (S[10:], np.arange(0, 200, 10)))]
    assert len(svds) == 2  # the second core set on the same sources reuses the first SVD
    assert fits[0].X_ is fits[1].X_ and not fits[0].X_.flags.writeable  # shared, so no fit may change it
    assert np.allclose(fits[0].X_, generic_proxy.success_patterns(S[:50].astype(np.float32), 8))
    assert not np.allclose(fits[2].X_, fits[0].X_)


def test_ridge_proxy_predicts_a_target_alone_as_in_a_batch():
    """Targets that show the same cells are solved together, others by their own pattern: each row's
    prediction is the one it gets alone."""
    from assessors.estimation.benchmark.proxy import RidgeProxy

    S, _ = simulate(n_llms=40)
    core = np.arange(0, 60, 2)
    proxy = RidgeProxy().fit(impute_columns(S[:30]), None, core)
    Y = S[30:][:, core].astype(np.float64)
    Y[:, :5] = np.nan  # one shared pattern (a hidden fold)
    alone = np.vstack([proxy.predict(Y[i:i + 1]) for i in range(len(Y))])
    np.testing.assert_allclose(proxy.predict(Y), alone, rtol=0, atol=1e-12)
    Y[0, 7] = np.nan  # two patterns
    alone[0] = proxy.predict(Y[:1])[0]
    np.testing.assert_allclose(proxy.predict(Y), alone, rtol=0, atol=1e-12)
