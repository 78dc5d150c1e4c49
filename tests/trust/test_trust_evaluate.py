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


def test_expected_band_without_a_finite_validation_auc_is_nan_not_a_crash(caplog):
    from omegaconf import OmegaConf

    from assessors.tasks.trust_eval import expected_band

    node = OmegaConf.create({"_target_": "assessors.trust.expected.TrustModel"})
    val = pd.DataFrame({"similarity": [0.1, 0.2], "range_excess": [0.0, 0.0], "loo_auc": [np.nan, np.nan],
                        "auc_generic": [np.nan, np.nan]})
    test = pd.DataFrame({"similarity": [0.3], "range_excess": [0.2], "loo_auc": [0.6]}, index=[7])
    tm, band = expected_band(node, val, test, "degenerate")
    assert tm is None and band.index.tolist() == [7] and band.isna().all().all()
    assert "cannot be fitted" in caplog.text
    val["auc_generic"] = [0.6, 0.7]
    tm, band = expected_band(node, val, test)
    assert tm is not None and np.isfinite(band["estimate"]).all()


def test_trust_eval_when_every_validation_llm_is_all_zero(compose, monkeypatch, tmp_path):
    """The degenerate population (most training and every validation LLM all-zero, the test LLMs the
    strongest) runs to the end: no band is fitted, the strong LLMs are flagged out of population."""
    import assessors.tasks.trust_eval as trust_eval
    from assessors.tasks.trust_eval import run

    real_prepare = trust_eval.prepare

    def degenerate(cfg):
        prep = real_prepare(cfg)
        res = prep.results
        order = np.argsort(np.nanmean(res.success, 1))
        llms = [res.llms[i] for i in order]
        prep.llms = {"train": llms[:12], "val": llms[12:16], "test": llms[-5:]}
        for name in llms[:9] + llms[12:16]:
            res.success[res.llms.index(name)] = 0.0
        return prep

    monkeypatch.setattr(trust_eval, "prepare", degenerate)
    cfg = compose(["experiment=trust_frontier", "tracking=none", "~trust_eval.scenarios.frontier",
                   "~trust_eval.scenarios.kor", "trust_eval.scenarios.random.data.subtasks=[bbh_navigate,bbh_snarks]",
                   "~specific.classifiers.xgboost", "selector.size=30"])
    out = run(cfg)
    table = pd.read_csv(tmp_path / "outputs" / "trust_eval" / "per_llm.csv")
    test = table[table["part"] == "test"]
    assert len(test) == 5 and test["expected_auc"].isna().all()
    assert test["flags"].fillna("").str.contains("range_above").all()
    assert "random.mean_auc_generic" in out
