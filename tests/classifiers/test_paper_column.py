"""The paper_generic column of ``train.py`` fits the depth-6 point of the paper's XGBoost grid; the
paper's own presets keep the whole grid."""
from __future__ import annotations

from hydra.utils import instantiate
from omegaconf import OmegaConf


def _plain(node):
    return OmegaConf.to_container(node, resolve=True)


def test_the_column_is_the_papers_xgboost_at_depth_6(compose):
    cfg = compose()
    column, paper = _plain(cfg.paper_generic.classifier), _plain(cfg.classifier)
    assert column["param_grid"] == {**paper["param_grid"], "max_depth": [6]} and paper["param_grid"]["max_depth"] == [3, 6]
    # everything but the grid's depths is the paper's classifier
    assert column["estimator"] == paper["estimator"]
    names = [name for name, _ in instantiate(cfg.paper_generic).classifier.candidates()]
    assert names == ["XGBClassifier(max_depth=6, n_estimators=150)"]


def test_the_papers_presets_and_the_classifier_override_keep_their_grids(compose):
    for overrides in (["assessor=paper_generic"], ["experiment=paper_in_distribution"]):
        assert _plain(compose(overrides).assessor.classifier.param_grid)["max_depth"] == [3, 6], overrides
    cfg = compose(["classifier=logreg_l2"])
    # classifier= is the configured assessor's (and the all-train-data baseline's) classifier, not the column's
    assert "C" in _plain(cfg.classifier.param_grid) and _plain(cfg.paper_generic.classifier.param_grid)["max_depth"] == [6]
