"""XGBoost through xgboost.dask on a 2-worker LocalCluster against in-process XGBoost, on real rows."""
from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.slow


def test_generic_assessor_on_a_local_cluster_matches_in_process_validation_auc(compose):
    pytest.importorskip("distributed", reason="pip install -e '.[scale]'")
    from hydra.utils import instantiate

    from assessors.classifiers.dask_xgb import DaskXGBClassifier
    from assessors.tasks.grid import per_llm_auc
    from assessors.tasks.prepare import prepare

    base = ["data=score_matrix_musr", "assessor=paper_generic", "features=success_pattern", "tracking=none", "~validate",
            "llm_split.n_train=150", "llm_split.n_val=40", "llm_split.n_test=40", "selector.size=30",
            "classifier.param_grid.max_depth=[3]"]
    cfg = compose(base)
    prep = prepare(cfg)
    S_tr = prep.S("train", "train")
    selector = instantiate(cfg.selector).fit(S_tr, prep.inst["train"], prep.X["train"])
    R_val = prep.results.matrix(prep.llms["val"], selector.reference_ids_)
    val = {}
    for name in ("xgboost", "xgboost_dask"):
        c = compose(base + [f"classifier={name}", "classifier.estimator.partition_rows=8192"] if name.endswith("dask")
                    else base)
        assessor = instantiate(c.assessor).fit(prep.X["train"], S_tr, np.asarray(selector.reference_index_))
        if name.endswith("dask"):
            assert isinstance(assessor.classifier_, DaskXGBClassifier)
        val[name] = per_llm_auc(prep.S("val", "val"), assessor.predict_proba(prep.X["val"], R_val), prep.llms["val"])
    pairs = 150 * (len(prep.inst["train"]) - 30)
    assert pairs > 50_000  # more rows than one partition: the cluster really splits them
    assert 0.6 < val["xgboost"].mean() < 0.95
    print({k: round(float(v.mean()), 4) for k, v in val.items()}, "pairs", pairs)
    assert abs(val["xgboost_dask"].mean() - val["xgboost"].mean()) < 0.005, val
