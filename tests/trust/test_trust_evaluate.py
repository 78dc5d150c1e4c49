"""Evaluation helpers on a constructed per-LLM table; the real-data run is slow-marked."""
import numpy as np
import pandas as pd
import pytest

from assessors.trust.evaluate import flag_table


def test_flag_table_counts():
    t = pd.DataFrame({"auc_generic": [0.6, 0.6, 0.9, 0.9, 0.6],
                      "auc_reference_only": [0.7, 0.7, 0.8, 0.8, 0.7],
                      "flags": ["range_above", "low_similarity", "range_below", "", ""]})
    f = flag_table(t)
    assert f.loc["population", ["tp", "fp", "fn"]].tolist() == [2, 1, 1]
    assert f.loc["population", "recall"] == pytest.approx(2 / 3)
    assert f.loc["population", "precision"] == pytest.approx(2 / 3)
    assert f.loc["population", "false_alarm_rate"] == pytest.approx(0.5)
    assert f.loc["range", "tp"] == 1 and np.isnan(f.loc["loo_below_ref_only", "precision"])


@pytest.mark.slow
def test_trust_eval_on_openai_evals(compose, tmp_path):
    from assessors.tasks.trust_eval import run

    cfg = compose(["experiment=trust_frontier", "tracking=none", "~trust_eval.scenarios.frontier",
                   "~trust_eval.scenarios.random", "~specific.classifiers.xgboost"])
    out = run(cfg)
    assert "kor.mean_auc_generic" in out
    assert (tmp_path / "outputs" / "trust_eval" / "similarity_vs_auc.png").exists()
