"""The latent model's predicted accuracy as a label-free feature, checked by simulation from the latent model."""
import numpy as np
import pandas as pd
import pytest
from sklearn.neighbors import KNeighborsRegressor

from assessors.data.results import Results
from assessors.errors import DataError
from assessors.estimation.benchmark.latent_proxy import LatentProxy
from assessors.estimation.label_free.baselines import ExtraFeature
from assessors.estimation.label_free.latent_feature import LatentAccuracy, align_source, unit_features
from assessors.estimation.label_free.meta_model import ProfileMetaModel


def latent_world(n_source=40, n_target=3, n_datasets=12, per_dataset=40, dims=2, seed=0):
    """Grades drawn from the latent model; datasets differ in difficulty, so accuracy varies by dataset."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=(n_source + n_target, dims))
    ds = np.repeat(np.arange(n_datasets), per_dataset)
    A = np.abs(rng.normal(0.9, 0.3, size=(len(ds), dims)))
    b = rng.normal(0, 1.5, n_datasets)[ds] + rng.normal(0, 0.5, len(ds))
    p = 1 / (1 + np.exp(-(theta @ A.T - b)))
    success = (rng.random(p.shape) < p).astype(float)
    return success[:n_source], success[n_source:], ds.astype(str)


def fast_model():
    return LatentAccuracy(LatentProxy(dims=2, max_iter=60))


def test_feature_tracks_accuracy_without_seeing_the_dataset():
    source, target, ds = latent_world()
    model = fast_model().fit(source)
    names = np.unique(ds)
    rows = np.repeat(np.arange(len(target)), len(names))
    units = np.tile(names, len(target))
    feat = unit_features(model, target, rows, units, ds, set(names))
    truth = np.array([target[r, ds == d].mean() for r, d in zip(rows, units)])
    assert np.corrcoef(feat, truth)[0, 1] > 0.8
    assert np.mean(np.abs(feat - truth)) < 0.12
    # the unit's own grades never enter: flipping them leaves its feature unchanged
    flipped = target.copy()
    flipped[0, ds == names[0]] = 1 - flipped[0, ds == names[0]]
    again = unit_features(model, flipped, rows[:1], units[:1], ds, set(names))
    assert again[0] == pytest.approx(feat[0])


def test_feature_errors_and_undescribed_datasets():
    source, target, ds = latent_world(n_source=10, n_datasets=4, per_dataset=15)
    src = source.copy()
    src[:, ds == "3"] = np.nan  # the sources never saw dataset 3
    model = fast_model().fit(src)
    feat = unit_features(model, target, np.array([0, 0]), np.array(["2", "3"]), ds, {"0", "1"})
    assert np.isfinite(feat[0]) and np.isnan(feat[1])
    with pytest.raises(DataError, match="must be hidden"):
        model.predict(target[:1], np.ones((1, target.shape[1]), dtype=bool))
    with pytest.raises(DataError, match="share 0 items"):
        fast_model().fit(np.full_like(source, np.nan))


def test_align_source_matches_ids_and_leaves_unknown_items_nan():
    inst = pd.DataFrame({"prompt": np.nan, "subgroup": "a", "target": np.nan}, index=["x", "y", "z"])
    src = Results(inst, ["m0", "m1"], np.array([[1, 0, 1], [0, 0, 1]], dtype=np.float32), name="src")
    out = align_source(src, ["z", "q", "x"])
    assert np.array_equal(out[:, [0, 2]], [[1, 1], [1, 0]]) and np.isnan(out[:, 1]).all()


def test_meta_model_uses_the_extra_feature():
    # Profiles carry no signal here; the extra feature (accuracy plus noise) does.
    rng = np.random.default_rng(0)
    acc = rng.uniform(0.1, 0.9, 80)
    conf = [rng.uniform(0.4, 0.6, 30) for _ in acc]
    extra = (acc + rng.normal(0, 0.03, acc.size))[:, None]
    extra[::10] = np.nan  # unknown for some sets: filled with the seen mean
    tr, te = np.arange(60), np.arange(60, 80)
    knn = KNeighborsRegressor(n_neighbors=5, weights="distance")
    plain = ProfileMetaModel(knn, d_conf=10).fit([conf[i] for i in tr], acc[tr])
    with_x = ProfileMetaModel(knn, d_conf=10, use_extra=True).fit([conf[i] for i in tr], acc[tr], None, extra[tr])
    mae_plain = np.mean(np.abs(plain.predict([conf[i] for i in te]) - acc[te]))
    mae_x = np.mean(np.abs(with_x.predict([conf[i] for i in te], extra[te]) - acc[te]))
    assert mae_x < 0.5 * mae_plain
    alone = ExtraFeature().fit([conf[i] for i in tr], acc[tr], None, extra[tr]).predict([conf[i] for i in te], extra[te])
    assert np.isfinite(alone).all()
    with pytest.raises(DataError, match="needs extra features"):
        ProfileMetaModel(use_extra=True).fit(conf, acc)
    with pytest.raises(DataError, match="one row per set"):
        plain.predict(conf[:3], extra[:2])
