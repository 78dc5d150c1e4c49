import numpy as np
import pytest
from omegaconf import OmegaConf
from scipy.stats import spearmanr
from sklearn.neighbors import KNeighborsRegressor

from assessors.errors import DataError
from assessors.estimation.label_free.baselines import ATC, AvgConf, AvgTrain, TemperatureScaling
from assessors.estimation.label_free.harness import units_from_results
from assessors.tasks.label_free import execute as _run
from assessors.estimation.label_free.meta_model import ProfileMetaModel
from assessors.estimation.label_free.oracle import known_probability_mae, matched_oracle, oracle_mae
from assessors.estimation.label_free.profile import confidence_profile
from assessors.estimation.label_free.simulate import simulate_confidence_results
from assessors.tracking import RunLogger


def test_profile_is_quantile_function():
    p = confidence_profile(np.array([0.9, 0.1, 0.5, np.nan]), d_conf=3)
    assert np.allclose(p, [0.1, 0.5, 0.9])
    assert np.all(np.diff(confidence_profile(np.random.default_rng(0).random(50), 20)) >= 0)
    with pytest.raises(DataError, match=r"\[0, 1\]"):
        confidence_profile(np.array([0.2, 1.5]))


def _split(gamma=2.0, seed=0):
    train = units_from_results(simulate_confidence_results(n_datasets=60, n_variants=2, gamma=gamma, seed=seed))
    test = units_from_results(simulate_confidence_results(n_datasets=20, n_variants=1, gamma=gamma, seed=seed + 1))
    return train, test


def test_meta_model_recovers_monotone_accuracy_confidence_relation():
    # Truth: P(correct | c) = c^2, an over-confident model. AVGCONF is biased; the meta-model learns it.
    (c_tr, y_tr, a_tr, _), (c_te, y_te, a_te, _) = _split()
    meta = ProfileMetaModel(KNeighborsRegressor(n_neighbors=5, weights="distance"), d_conf=20).fit(c_tr, a_tr)
    pred = meta.predict(c_te)
    expected = np.array([np.mean(c ** 2) for c in c_te])  # population accuracy implied by the relation
    mae_meta = np.mean(np.abs(pred - a_te))
    mae_conf = np.mean(np.abs(AvgConf().fit(c_tr, a_tr).predict(c_te) - a_te))
    assert mae_meta < 0.06
    assert mae_meta < 0.5 * mae_conf
    assert spearmanr(pred, expected).statistic > 0.9
    assert np.mean(np.abs(pred - expected)) < 0.06


def test_baselines():
    (c_tr, y_tr, a_tr, _), (c_te, y_te, a_te, _) = _split()
    assert np.allclose(AvgTrain().fit(c_tr, a_tr).predict(c_te), np.mean(a_tr))
    ts = TemperatureScaling().fit(c_tr, a_tr)
    assert ts.temperature_ > 1.0  # an over-confident model needs softening (T > 1)
    mae_ts = np.mean(np.abs(ts.predict(c_te) - a_te))
    mae_conf = np.mean(np.abs(AvgConf().fit(c_tr, a_tr).predict(c_te) - a_te))
    assert mae_ts < mae_conf
    atc = ATC().fit(c_tr, a_tr, y_tr)
    assert 0 < atc.threshold_ < 1
    assert np.mean(np.abs(atc.predict(c_te) - a_te)) < mae_conf
    with pytest.raises(DataError, match="grades"):
        ATC().fit(c_tr, a_tr)


def test_oracle_mae_decreases_and_matching():
    rng = np.random.default_rng(0)
    sets = [rng.random(200) < p for p in (0.3, 0.6, 0.8)]
    o = oracle_mae(sets, [1, 4, 16, 64], n_draws=100)
    assert o[1] > o[4] > o[16] > o[64]
    assert matched_oracle(o[16] - 1e-6, o) == 16 and matched_oracle(1.0, o) == 0


def test_harness_on_simulated_data_logs_report():
    cfg = OmegaConf.create({"seed": 0, "label_free": {
        "simulate": {"_target_": "assessors.estimation.label_free.simulate.simulate_confidence_results",
                     "n_datasets": 25, "n_variants": 2, "n_items": 60},
        "n_folds": 5, "oracle_ls": [1, 4, 16], "oracle_draws": 20,
        "methods": {
            "meta_knn": {"_target_": "assessors.estimation.label_free.meta_model.ProfileMetaModel", "d_conf": 10},
            "avgconf": {"_target_": "assessors.estimation.label_free.baselines.AvgConf"},
            "atc": {"_target_": "assessors.estimation.label_free.baselines.ATC"}}}})
    run = RunLogger()
    m = _run(cfg, run)
    assert m["n_datasets"] == 25 and m["n_units"] == 50
    assert m["mae_meta_knn"] < m["mae_avgconf"]
    assert {"plots/label_free.png", "tables/label_free_mae.csv", "report.md"} <= set(run.artifacts)


def test_user_supplied_confidence_is_required():
    res = simulate_confidence_results(n_datasets=3, n_variants=1, n_items=20)
    res.confidence = None
    with pytest.raises(DataError, match="confidence"):
        units_from_results(res)


@pytest.mark.slow  # Lightning's per-step overhead: ~10 s idle, minutes on a loaded machine
def test_mlp_meta_model_learns_the_relation():
    from assessors.estimation.label_free.mlp import MLPRegressor

    (c_tr, y_tr, a_tr, _), (c_te, y_te, a_te, _) = _split()
    meta = ProfileMetaModel(MLPRegressor(max_steps=400), d_conf=20).fit(c_tr, a_tr)
    mae = np.mean(np.abs(meta.predict(c_te) - a_te))
    mae_conf = np.mean(np.abs(AvgConf().fit(c_tr, a_tr).predict(c_te) - a_te))
    assert mae < 0.5 * mae_conf, (mae, mae_conf)


@pytest.mark.slow
def test_label_free_preset_runs_on_the_committed_smollm2_confidences(compose):
    """The real generated data (datasets/smollm2_confidence): loads, forms units, runs the CV."""
    cfg = compose(["experiment=label_free", "tracking=none", "label_free.oracle_draws=20",
                   "~label_free.methods.meta_mlp", "~label_free.methods.meta_xgboost"])
    from hydra.utils import instantiate

    res = instantiate(cfg.data)
    assert res.confidence is not None and res.instances["subgroup"].nunique() == 26
    assert len(res.llms) >= 2 and np.nanmin(res.confidence) >= 0 and np.nanmax(res.confidence) <= 1
    run = RunLogger()
    m = _run(cfg, run)
    assert m["n_datasets"] == 26 and m["n_units"] == 26 * len(res.llms)
    for name in ("meta_knn", "avgtrain", "avgconf", "temperature_scaling", "atc"):
        assert 0 <= m[f"mae_{name}"] < 0.5
    assert "report.md" in run.artifacts
    # the preset's optimized metric is the best method's MAE
    assert m[cfg.optimized_metric] == min(m[f"mae_{n}"] for n in cfg.label_free.methods)
    # the latent feature describes the 24 BBH datasets (their items are in the leaderboard source), not the other 2
    assert m["latent_feature_coverage"] == pytest.approx(24 / 26)


def test_oracle_budget_not_smaller_than_a_set_is_not_reported():
    sets = [np.arange(40) % 2, np.arange(35) % 3 == 0]
    o = oracle_mae(sets, [8, 35, 64], n_draws=20)
    assert np.isfinite(o[8]) and np.isnan(o[35]) and np.isnan(o[64])
    assert matched_oracle(1.0, o) == 0 and matched_oracle(0.0, o) == 8  # NaN budgets never match


def test_known_probability_mae_is_the_simulated_floor():
    # Exact Poisson-binomial value against Monte-Carlo grades, and against the known-relation
    # estimate mean(c^gamma) on simulated sets: nothing label-free does better on average.
    rng = np.random.default_rng(0)
    probs = [rng.beta(2, 2, 35), rng.beta(0.5, 0.5, 35), np.full(20, 0.5)]
    acc = [(rng.random((20000, len(p))) < p).mean(1) for p in probs]
    mc = np.mean([np.mean(np.abs(a - np.median(a))) for a in acc])
    assert known_probability_mae(probs) == pytest.approx(mc, rel=0.03)
    # no other constant guess does better, the mean of the probabilities included
    assert known_probability_mae(probs) <= np.mean([np.mean(np.abs(a - p.mean())) for a, p in zip(acc, probs)])
    assert known_probability_mae([np.zeros(10), np.ones(5)]) == 0.0
    conf, correct, acc, _ = units_from_results(simulate_confidence_results(n_datasets=100, n_variants=2,
                                                                           n_items=35, seed=3))
    floor = known_probability_mae([c ** 2 for c in conf])
    known = np.mean(np.abs(np.array([np.mean(c ** 2) for c in conf]) - acc))
    assert known == pytest.approx(floor, rel=0.15)


def test_dataset_shift_raises_every_label_free_error_and_is_off_by_default():
    base = simulate_confidence_results(n_datasets=40, n_variants=2, n_items=35, seed=1)
    same = simulate_confidence_results(n_datasets=40, n_variants=2, n_items=35, shift_sd=0.0, seed=1)
    assert np.array_equal(base.success, same.success)
    errs = []
    for sd in (0.0, 1.0):
        conf, _, acc, _ = units_from_results(simulate_confidence_results(n_datasets=100, n_variants=2, n_items=35,
                                                                         shift_sd=sd, seed=1))
        errs.append(np.mean(np.abs(np.array([np.mean(c ** 2) for c in conf]) - acc)))
    assert errs[1] > 1.5 * errs[0]  # the known relation cannot see a dataset's own shift
