"""The split-level assessor proxy: fitted once per source split and core size, honest under cross-fitting."""
from pathlib import Path

import numpy as np
import pytest
from hydra.utils import instantiate
from omegaconf import OmegaConf

from assessors.estimation.benchmark import base
from tests.estimation.conftest import simulate
from tests.estimation.test_estimators import _trials


def _aipw(n_estimators=30, visible_counts=None):
    node = OmegaConf.load(Path(__file__).resolve().parents[2] / "conf/estimator/aipw_assessor_split.yaml")
    node.seed = 0
    node.proxy.classifier.n_estimators = n_estimators
    node.proxy.visible_counts = visible_counts
    return instantiate(node)


@pytest.mark.parametrize("visible_counts", [None, [16, 32, 64]], ids=["per_size", "all_sizes"])
def test_unbiased_and_covers(visible_counts):
    S, _ = simulate(n_llms=40, n_items=300, dims=1, seed=8)
    err, cover, _ = _trials(_aipw(visible_counts=visible_counts), S, 30, 40, range(40))
    se = err.std(ddof=1) / np.sqrt(err.size)
    assert abs(err.mean()) < max(3 * se, 0.005), (err.mean(), se)
    assert cover.mean() >= 0.9, cover.mean()  # 40 trials x 10 targets


def test_one_fit_per_source_split_and_core_size():
    S, _ = simulate(n_llms=40, n_items=300, dims=2, seed=3)
    base._CACHE.clear()
    a = _aipw().set_params(core_size=40, seed=0).fit(S[:30])
    b = _aipw().set_params(core_size=40, seed=1).fit(S[:30])  # another trial: another core, the same fit
    assert not np.array_equal(a.core_index_, b.core_index_)
    assert a.proxy_.model_ is b.proxy_.model_
    c = _aipw().set_params(core_size=80, seed=0).fit(S[:30])
    assert c.proxy_.model_ is not a.proxy_.model_
    # with visible_counts, one fit for every core size too
    one = [_aipw(visible_counts=[16, 32, 64]).set_params(core_size=size).fit(S[:30]) for size in (20, 40, 80)]
    assert one[0].proxy_.model_ is one[1].proxy_.model_ is one[2].proxy_.model_
    # the factorised trees give the classifier's own probabilities
    p = a.proxy_
    Y = S[30:, a.core_index_]
    fast = p.predict(Y)
    trees, p.trees_ = p.trees_, None
    assert trees is not None
    np.testing.assert_allclose(fast, p.predict(Y), atol=1e-4)
    # the proxy predicts better than the items' source means: mean AUC over held-out LLMs
    from sklearn.metrics import roc_auc_score
    auc = np.mean([roc_auc_score(S[30 + i], fast[i]) for i in range(10) if 0 < S[30 + i].mean() < 1])
    assert auc > 0.7, auc


def test_a_hidden_answer_never_reaches_its_own_prediction():
    S, _ = simulate(n_llms=40, n_items=300, dims=2, seed=5)
    est = _aipw().set_params(core_size=40, seed=0).fit(S[:30])
    Y = S[30:, est.core_index_].copy()
    f_lab, _ = est.proxy_predictions(Y)
    j = 3
    Y[:, j] = 1 - Y[:, j]
    f_flip, _ = est.proxy_predictions(Y)
    np.testing.assert_allclose(f_flip[:, j], f_lab[:, j])
    assert not np.allclose(f_flip[:, est.fold_ != est.fold_[j]], f_lab[:, est.fold_ != est.fold_[j]])
