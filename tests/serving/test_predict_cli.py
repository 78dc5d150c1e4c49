"""predict.py modes (score / route with calibration) on a tiny real assessor saved as an MLflow pyfunc model."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from assessors.errors import ConfigError, DataError


@pytest.fixture(scope="module")
def saved_model(tiny, tmp_path_factory):
    import mlflow.pyfunc

    from assessors.core.pyfunc import PIP_REQUIREMENTS

    path = tmp_path_factory.mktemp("model") / "assessor"
    mlflow.pyfunc.save_model(str(path), python_model=tiny["model"], pip_requirements=PIP_REQUIREMENTS)
    return path


@pytest.fixture
def files(tiny, tmp_path):
    res, ref_ids = tiny["results"], tiny["reference_ids"]
    ids = tiny["test_ids"][:12]
    pd.DataFrame({"id": ids, "prompt": res.prompts(ids)}).to_csv(tmp_path / "prompts.csv", index=False)
    new = tiny["test_llms"][3]
    vec = res.matrix([new], ref_ids)[0]
    pd.DataFrame({"reference_id": ref_ids, "success": vec}).to_csv(tmp_path / "ref.csv", index=False)
    (tmp_path / "ref.json").write_text(json.dumps({i: float(v) for i, v in zip(ref_ids, vec)}))
    return {"prompts": tmp_path / "prompts.csv", "csv": tmp_path / "ref.csv", "json": tmp_path / "ref.json",
            "ids": ids, "llm": new, "vec": vec}


def test_load_model_from_configured_dir_only(saved_model, tmp_path):
    from assessors.routing.engine import load_assessor_model

    m = load_assessor_model(str(saved_model))
    assert m.reference_ids and hasattr(m.assessor, "predict_proba")
    with pytest.raises(ConfigError, match="no MLmodel"):
        load_assessor_model(str(tmp_path))
    with pytest.raises(ConfigError, match="not set"):
        load_assessor_model(None)


def test_score_writes_p_success_for_new_llm(compose, saved_model, files, tiny, tmp_path):
    from assessors.tasks.score import run as score

    out = tmp_path / "scores.csv"
    cfg = compose([f"model_uri={saved_model}", f"prompts={files['prompts']}", f"out={out}", "mode=score",
                   f"llms=[{{name: new, reference: {files['csv']}}}, {{name: new_json, reference: {files['json']}}}]"],
                  config_name="predict")
    summary = score(cfg)
    df = pd.read_csv(out, dtype={"id": str})
    assert len(df) == 24 and set(df["llm"]) == {"new", "new_json"} and summary["n_prompts"] == 12
    m = tiny["model"]
    want = m.assessor.predict_proba(m.featurizer.transform(tiny["results"].prompts(files["ids"])), files["vec"])
    np.testing.assert_allclose(df[df.llm == "new"]["p_success"], want, atol=1e-6)
    np.testing.assert_allclose(df[df.llm == "new_json"]["p_success"], want, atol=1e-6)


def test_route_with_known_llms_and_calibration(compose, saved_model, files, tiny, tmp_path, data_dir):
    from assessors.tasks.route import run as route

    known = tiny["train_llms"][:3]
    out = tmp_path / "routes.jsonl"
    cal_ids = tiny["test_ids"][12:212]
    cfg = compose([f"model_uri={saved_model}", f"prompts={files['prompts']}", f"out={out}", "mode=route",
                   "router=utility", f"known_llms=[{','.join(known)}]",
                   "default_cost.per_1k_input=0.01", f"llms=[{{name: {known[2]}, cost: {{per_item: 0.05}}}}]",
                   "+calibration.data._target_=assessors.data.loaders.open_llm_leaderboard_v2.load_open_llm_leaderboard_v2",
                   f"+calibration.data.root={data_dir}", "+calibration.data.subtasks=[bbh_navigate]",
                   "calibration.target_accuracy=0.5"], config_name="predict")
    summary = route(cfg)
    df = pd.read_json(out, lines=True)
    assert len(df) == 12 and set(df["llm"]) <= set(known)
    assert summary["calibration"]["accuracy"] >= 0.5 and summary["calibration"]["knob"] == "lam"
    assert {f"p_success[{n}]" for n in known} <= set(df.columns)


def test_bad_reference_file_names_file(compose, saved_model, files, tmp_path):
    from assessors.tasks.score import run as score

    bad = tmp_path / "bad.csv"
    pd.DataFrame({"reference_id": ["x"], "success": [1]}).to_csv(bad, index=False)
    cfg = compose([f"model_uri={saved_model}", f"prompts={files['prompts']}", f"llms=[{{name: z, reference: {bad}}}]"],
                  config_name="predict")
    with pytest.raises(DataError, match="not reference ids"):
        score(cfg)


@pytest.mark.slow
def test_predict_py_score_subprocess(saved_model, files, tmp_path):
    from pathlib import Path

    ROOT = Path(__file__).resolve().parents[2]
    out = tmp_path / "s.csv"
    r = subprocess.run([sys.executable, "predict.py", "mode=score", f"model_uri={saved_model}", f"prompts={files['prompts']}",
                        f"out={out}", f"llms=[{{name: new, reference: {files['csv']}}}]", f"hydra.run.dir={tmp_path}/h"],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    summary = json.loads(r.stdout)  # stdout is one JSON document: logs go to stderr, trust reports to a file
    assert summary["n_prompts"] == 12 and len(pd.read_csv(out)) == 12
    reports = json.loads(Path(summary["trust"]["reports"]).read_text())
    assert "new" in reports and sum(summary["trust"]["verdicts"].values()) == len(reports)
    assert Path(summary["trust"]["reports"]).parent == tmp_path / "h"  # the run folder
    assert "Traceback" not in r.stderr and len(r.stderr.splitlines()) <= 30


@pytest.mark.slow
def test_a_bad_api_key_is_one_line_without_traceback(saved_model, tmp_path):
    import os
    from pathlib import Path

    ROOT = Path(__file__).resolve().parents[2]
    r = subprocess.run([sys.executable, "predict.py", "mode=serve", f"model_uri={saved_model}", "server.port=0",
                        f"hydra.run.dir={tmp_path}/h"], cwd=ROOT, capture_output=True, text=True, timeout=600,
                       env={**os.environ, "ASSESSORS_API_KEYS": "short", "PYTHONPATH": str(ROOT)})
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-2000:]
    (line,) = [ln for ln in r.stderr.splitlines() if "Error" in ln]
    assert line.startswith("ConfigError: API keys must be at least 16 characters long")
    assert "Traceback" in (tmp_path / "h" / "predict.log").read_text()


def test_tracked_model_uri_uses_the_configured_store(compose, files, tmp_path):
    from assessors.tasks.predict_common import tracking_uri_from_cfg
    from assessors.tasks.score import run as score

    cfg = compose(["model_uri=runs:/0123456789abcdef/assessor", f"prompts={files['prompts']}"], config_name="predict")
    # the store train.py logs to, as an absolute path, from conf/tracking + conf/paths
    assert tracking_uri_from_cfg(cfg) == f"sqlite:///{tmp_path}/outputs/mlflow.db"
    with pytest.raises(ConfigError, match=f"no MLflow store at {tmp_path}/outputs/mlflow.db"):
        score(cfg)
    assert not (tmp_path / "outputs" / "mlflow.db").exists()  # not created empty by the failed lookup
