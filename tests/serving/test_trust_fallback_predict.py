"""``predict.py``: the posterior trust verdict switches an out-of-population LLM to the fallback (and
says so), ``trust.fallback=false`` turns that off, and onboarding logs the report to MLflow."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest


def _reference_file(d, llm, path):
    vec = d["results"].matrix([llm], d["reference_ids"])[0]
    pd.DataFrame({"reference_id": d["reference_ids"], "success": vec}).to_csv(path, index=False)
    return path


@pytest.mark.parametrize("fallback", [True, False])
def test_score_uses_the_fallback_when_the_verdict_says_out_of_population(degenerate, compose, tmp_path, fallback):
    from assessors.tasks.score import run as score

    d = degenerate
    strong = d["new"][0]
    prompts = tmp_path / "prompts.csv"
    pd.DataFrame({"id": d["test_ids"][:50], "prompt": d["results"].prompts(d["test_ids"][:50])}).to_csv(prompts, index=False)
    cfg = compose(["mode=score", f"prompts={prompts}", f"out={tmp_path}/scores.csv", "tracking=none",
                   f"trust.fallback={str(fallback).lower()}",
                   f"llms=[{{name: strong, reference: {_reference_file(d, strong, tmp_path / 'ref.csv')}}}, "
                   f"{{name: {d['model'].llms[-1]}}}]"], config_name="predict")
    out = score(cfg, model=d["model"])
    assert out["trust"]["strong"]["verdict"] == "out of population"
    want = "recalibrated" if fallback else "assessor"
    assert out["predictors"]["strong"] == want
    for name, rep in out["trust"].items():  # every registered LLM: the verdict alone decides
        assert out["predictors"][name] == ("recalibrated" if fallback and rep["verdict"] == "out of population"
                                           else "assessor")
    table = pd.read_csv(tmp_path / "scores.csv")
    mine = table[table["llm"] == "strong"]
    assert (mine["predictor"] == want).all()
    assert mine["p_std"].isna().all() == fallback  # the fallback has no posterior spread
    if fallback:  # the fallback predicts the strong LLM's level from its own answers
        assert mine["p_success"].mean() > 0.5


def test_onboarding_logs_the_report_v2_to_mlflow(degenerate, compose, tmp_path):
    import mlflow

    from assessors.tasks.onboard import log_onboarding_trust
    from assessors.trust.posterior_policy import make_trust_fn

    d = degenerate
    report, predictor = make_trust_fn(d["model"])(d["results"].matrix([d["new"][1]], d["reference_ids"])[0])
    assert predictor is not None
    cfg = compose([], config_name="predict")
    log_onboarding_trust(cfg, "strong-1", report)
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path}/outputs/mlflow.db")
    runs = mlflow.search_runs(search_all_experiments=True)
    assert len(runs) == 1
    run = runs.iloc[0]
    assert run["tags.trust.verdict"] == "out of population" and run["tags.trust.predictor"] == "recalibrated"
    assert run["metrics.trust.out_of_population"] == 1.0 and run["metrics.trust.fallback_applied"] == 1.0
    local = mlflow.artifacts.download_artifacts(run_id=run["run_id"], artifact_path="trust/report_v2.json",
                                                dst_path=str(tmp_path / "dl"))
    assert json.load(open(local))["message"] == "out of population: use the fallback"
    assert np.isfinite(run["metrics.trust.expected_accuracy"])
    # the re-levelled fallback keeps the latent ranking: the band of what it serves is the posterior's
    assert report["fallback"]["auc_band_from"] == "posterior"
    assert (run["metrics.trust.served_auc_low"], run["metrics.trust.served_auc_high"]) == pytest.approx(
        tuple(report["fallback"]["auc_band"]))
    assert (run["metrics.trust.served_accuracy_low"], run["metrics.trust.served_accuracy_high"]) == pytest.approx(
        tuple(report["fallback"]["accuracy_band"]))
    assert run["metrics.trust.served_expected_accuracy"] == pytest.approx(report["fallback"]["expected_accuracy"])


def test_fallback_flags_restrict_the_fallback_to_chosen_flags(degenerate):
    from assessors.trust.posterior_policy import make_trust_fn

    d = degenerate
    vec = d["results"].matrix([d["new"][2]], d["reference_ids"])[0]
    rep, pred = make_trust_fn(d["model"], fallback_flags=["misfit"])(vec)
    assert "misfit" in rep["flags"] and pred is not None and rep["fallback"]["applied"]
    rep, pred = make_trust_fn(d["model"], fallback_flags=["accuracy_below_training"])(vec)
    assert rep["verdict"] == "out of population" and pred is None
    assert rep["fallback"] == {"enabled": True, "triggered": False, "applied": False, "predictor": "latent",
                               "auc_band": rep["auc_band"], "auc_band_from": "posterior",
                               "expected_accuracy": rep["expected_accuracy"], "accuracy_band": rep["accuracy_band"],
                               "accuracy_band_from": "posterior"}


def test_score_reports_trust_about_the_prompts_given(degenerate, compose, tmp_path):
    from assessors.errors import ConfigError
    from assessors.tasks.score import run as score

    d = degenerate
    prompts = tmp_path / "prompts.csv"
    pd.DataFrame({"id": d["test_ids"][:40], "prompt": d["results"].prompts(d["test_ids"][:40])}).to_csv(prompts, index=False)
    base = ["mode=score", f"prompts={prompts}", f"out={tmp_path}/scores.csv", "tracking=none",
            f"llms=[{{name: strong, reference: {_reference_file(d, d['new'][0], tmp_path / 'ref.csv')}}}]"]
    about = score(compose(base, config_name="predict"), model=d["model"])["trust"]["strong"]
    assert about["target"] == {"source": "prompts", "n_prompts": 40}
    ref = score(compose([*base, "trust.about=reference"], config_name="predict"), model=d["model"])["trust"]["strong"]
    assert ref["target"] == {"source": "reference", "n_prompts": len(d["reference_ids"])}
    assert about["expected_accuracy"] != ref["expected_accuracy"]  # a report about other prompts
    cut = score(compose([*base, "server.onboarding.trust_target_max=25"], config_name="predict"), model=d["model"])
    assert cut["trust"]["strong"]["target"] == {"source": "prompts", "n_prompts": 25, "n_available": 40}
    with pytest.raises(ConfigError, match="trust.about"):
        score(compose([*base, "trust.about=everything"], config_name="predict"), model=d["model"])
