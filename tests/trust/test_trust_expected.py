"""Expected-quality model (recovery + conformal coverage by simulation) and the LOO reference AUC."""
import pickle

import numpy as np
import pandas as pd
import pytest

from assessors.trust.expected import TrustModel, loo_reference_auc, loo_reference_predictions


def _sim(rng, n):
    sig = pd.DataFrame({"similarity": rng.uniform(0, 0.8, n), "range_excess": np.abs(rng.normal(0, 0.05, n)),
                        "loo_auc": rng.uniform(0.5, 0.9, n)})
    auc = 0.55 + 0.3 * sig["similarity"] - 0.5 * sig["range_excess"] + rng.normal(0, 0.03, n)
    return sig, auc.to_numpy()


def test_trust_model_recovers_signal_and_covers():
    rng = np.random.default_rng(0)
    cover = []
    for rep in range(30):
        sig, y = _sim(rng, 30)
        tm = TrustModel(alpha=0.2, ridge=0.1).fit(sig, y)
        new, y_new = _sim(rng, 200)
        band = tm.predict(new)
        cover.append(((y_new >= band["low"]) & (y_new <= band["high"])).mean())
        if rep == 0:
            assert np.corrcoef(band["estimate"], y_new)[0, 1] > 0.8
            assert tm.halfwidth_ < 0.1
    # split-conformal guarantee is marginal: mean coverage >= 1 - alpha (minus simulation slack)
    assert np.mean(cover) >= 0.78


def test_trust_model_too_few_llms_gives_full_band_and_pickles():
    rng = np.random.default_rng(1)
    sig, y = _sim(rng, 3)
    tm = TrustModel(alpha=0.2).fit(sig, y)
    assert np.isinf(tm.halfwidth_)
    band = pickle.loads(pickle.dumps(tm)).predict(sig.assign(loo_auc=np.nan))
    assert (band["low"] == 0).all() and (band["high"] == 1).all()


class _Probe:
    """Stands in for a GenericAssessor: predicts the reference entry it is given for each item."""

    def __init__(self, n):
        self.reference_features_ = np.eye(n, dtype=np.float32)

    def predict_proba(self, X, R):
        j = X.argmax(1)  # which reference item each prompt is
        out = R[:, j]
        return np.where(np.isnan(out), 0.5, out)


def test_loo_masks_the_label_of_the_item_predicted():
    r = np.r_[np.ones(10), np.zeros(10)].astype(np.float32)
    p = loo_reference_predictions(_Probe(20), r)
    assert np.allclose(p, 0.5)  # the probe would copy the label if it leaked
    assert loo_reference_auc(_Probe(20), r) == pytest.approx(0.5)
    assert np.isnan(loo_reference_auc(_Probe(20), np.zeros(20)))


def test_loo_auc_of_a_real_generic_assessor_is_informative():
    from sklearn.linear_model import LogisticRegression

    from assessors.classifiers.grid import ParamGrid
    from assessors.core.generic import GenericAssessor

    rng = np.random.default_rng(0)
    n, d, k = 240, 4, 30
    X = rng.normal(size=(n, d)).astype(np.float32)
    skill = rng.normal(size=(k, 1))
    S = (rng.random((k, n)) < 1 / (1 + np.exp(-(2 * X[:, :1].T + skill)))).astype(np.float32)
    ref = np.arange(40)
    g = GenericAssessor(ParamGrid(LogisticRegression(max_iter=500), {})).fit(X, S[:25], ref)
    aucs = [loo_reference_auc(g, S[i, ref]) for i in range(25, 30)]
    assert np.mean(aucs) > 0.7


def test_fit_trust_hook_on_a_synthetic_pipeline():
    from omegaconf import OmegaConf
    from sklearn.linear_model import LogisticRegression

    from assessors.classifiers.grid import ParamGrid
    from assessors.core.generic import GenericAssessor
    from assessors.data.results import Results
    from assessors.tasks.prepare import Prepared
    from assessors.tasks.train_trust import fit_trust
    from assessors.tracking import RunLogger

    rng = np.random.default_rng(0)
    n, k = 300, 40
    X = rng.normal(size=(n, 3)).astype(np.float32)
    S = (rng.random((k, n)) < 1 / (1 + np.exp(-(2 * X[:, :1].T + rng.normal(size=(k, 1)))))).astype(np.float32)
    ids = [str(i) for i in range(n)]
    res = Results(pd.DataFrame({"subgroup": "x"}, index=ids), [f"m{i}" for i in range(k)], S)
    inst = {"train": ids[:150], "val": ids[150:200], "test": ids[200:]}
    llms = {"train": res.llms[:25], "val": res.llms[25:35], "test": res.llms[35:]}
    prep = Prepared(res, inst, llms, {"train": X[:150], "val": X[150:200], "test": X[200:]}, featurizer=None)
    ref = np.arange(40)
    g = GenericAssessor(ParamGrid(LogisticRegression(max_iter=500), {})).fit(X[:150], S[:25, :150], ref)
    run = RunLogger()
    tm = fit_trust(OmegaConf.create({}), prep, g, ids[:40], run)
    assert tm.n_fit_ == 10 and np.isfinite(tm.halfwidth_)
    table = run.artifacts["trust/test_llms.csv"]
    assert len(table) == 5 and table["expected_auc"].between(0, 1).all()
