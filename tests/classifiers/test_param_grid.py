from pathlib import Path

import numpy as np
import pytest
from hydra.utils import instantiate
from omegaconf import OmegaConf
from sklearn.linear_model import LogisticRegression

from assessors.classifiers.grid import ParamGrid
from assessors.errors import ConfigError

CONF = Path(__file__).resolve().parents[2] / "conf" / "classifier"


def test_names_follow_sorted_grid_keys():
    grid = ParamGrid(LogisticRegression(), {"C": [0.1, 1.0], "solver": ["lbfgs", "saga"]})
    names = [n for n, _ in grid.candidates()]
    assert names == [
        "LogisticRegression(C=0.1, solver='lbfgs')",
        "LogisticRegression(C=0.1, solver='saga')",
        "LogisticRegression(C=1.0, solver='lbfgs')",
        "LogisticRegression(C=1.0, solver='saga')",
    ]
    assert len(grid) == 4
    assert [est.C for _, est in grid.candidates()] == [0.1, 0.1, 1.0, 1.0]


def test_empty_grid_yields_the_estimator_alone():
    for pg in (None, {}):
        (name, est), = ParamGrid(LogisticRegression(C=3.0), pg).candidates()
        assert name == "LogisticRegression()" and est.C == 3.0


def test_candidates_are_unfitted_independent_clones():
    proto = LogisticRegression(max_iter=200)
    grid = ParamGrid(proto, {"C": [0.01, 1.0]})
    (_, a), (_, b) = grid.candidates()
    assert a is not proto and b is not proto and a is not b
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    a.fit(X, (X[:, 0] > 0).astype(int))
    assert hasattr(a, "coef_") and not hasattr(b, "coef_") and not hasattr(proto, "coef_")
    a.set_params(max_iter=5)
    assert b.max_iter == 200 and proto.max_iter == 200 and proto.C == 1.0
    # a second call gives fresh objects again
    (_, a2), _ = grid.candidates()
    assert not hasattr(a2, "coef_") and a2 is not a


@pytest.mark.parametrize("pg, match", [({"C": 0.1}, "must be a list"), ({"C": []}, "empty list"), ({"nope": [1]}, "does not accept")])
def test_bad_grids_raise_config_error(pg, match):
    with pytest.raises(ConfigError, match=match):
        ParamGrid(LogisticRegression(), pg).candidates()


@pytest.mark.parametrize("name", ["logreg_l1", "logreg_l2", "xgboost", "mlp"])
def test_every_classifier_config_instantiates(name):
    grid = instantiate(OmegaConf.load(CONF / f"{name}.yaml"))
    cands = grid.candidates()
    assert isinstance(grid, ParamGrid) and len(cands) >= 2
    assert len({n for n, _ in cands}) == len(cands)  # names are unique keys for MLflow
    for _, est in cands:
        assert hasattr(est, "fit") and hasattr(est, "predict_proba")
        assert not isinstance(est.get_params().get("hidden_sizes", []), type(OmegaConf.create([])))


def test_logreg_configs_set_the_penalty_they_name():
    l1 = instantiate(OmegaConf.load(CONF / "logreg_l1.yaml")).estimator
    l2 = instantiate(OmegaConf.load(CONF / "logreg_l2.yaml")).estimator
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 30))
    y = (X[:, 0] + 0.5 * rng.normal(size=300) > 0).astype(int)
    n_zero_l1 = (l1.set_params(C=0.05).fit(X, y).coef_ == 0).sum()
    n_zero_l2 = (l2.set_params(C=0.05).fit(X, y).coef_ == 0).sum()
    assert n_zero_l1 >= 10 and n_zero_l2 == 0  # L1 zeroes irrelevant features, L2 does not
