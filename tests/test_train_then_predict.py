"""Train, then predict, as a user does: train.py prints a predict.py command, which runs as printed;
``mlflow models serve`` answers the same numbers for the LLM it is asked about (slow: subprocesses)."""
from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parent.parent

TINY = [
    "data.subtasks=[bbh_navigate,bbh_sports_understanding,bbh_web_of_lies]",
    "features=unigram", "features.max_features=200",
    "classifier.param_grid.n_estimators=[40]", "paper_generic_classifier.param_grid.n_estimators=[40]", "classifier.param_grid.max_depth=[3]",
    "selector.size=30", "llm_split.n_train=20", "llm_split.n_val=4", "llm_split.n_test=4",
    "compare.specific=false", "compare.reference_only=false", "compare.all_train_data=false",
    "compare.random_selector=false", "plots=false",
]


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900, **kw)
    assert r.returncode == 0, f"{shlex.join(cmd)}\n{r.stderr[-3000:]}"
    return r


@pytest.fixture(scope="module")
def trained(tmp_path_factory, data_dir):
    """train.py on a tiny slice; returns its stdout and the outputs directory."""
    out = tmp_path_factory.mktemp("train_then_predict") / "outputs"
    stray = (ROOT / "mlflow.db").exists()
    r = _run([sys.executable, "train.py", *TINY, f"paths.outputs={out}", f"paths.data_dir={data_dir}"])
    return {"stdout": r.stdout, "outputs": out, "stray_before": stray}


def _printed_command(stdout: str) -> list[str]:
    lines = stdout.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("Next: score held-out prompts with this model"))
    return shlex.split(lines[head + 1])


@pytest.mark.slow
def test_train_prints_a_predict_command_that_runs_as_printed(trained):
    cmd = _printed_command(trained["stdout"])
    assert cmd[:2] == ["python", "predict.py"] and "mode=score" in cmd
    assert any(a.startswith("model_uri=") for a in cmd) and f"paths.outputs={trained['outputs']}" in cmd
    # exactly as printed (python = this interpreter), with no MLFLOW_TRACKING_URI in the environment
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    r = _run([sys.executable, *cmd[1:]], env=env)
    summary = json.loads(r.stdout)
    scores = pd.read_csv(summary["out"])
    assert Path(summary["out"]).is_relative_to(trained["outputs"])
    assert summary["n_prompts"] == 20 and len(summary["llms"]) == 20 and len(scores) == 400
    assert scores["p_success"].between(0, 1).all() and scores.groupby("llm")["p_success"].std().gt(0).all()
    if not trained["stray_before"]:
        assert not (ROOT / "mlflow.db").exists()  # nothing written to the working directory's default store


@pytest.mark.slow
def test_mlflow_models_serve_answers_the_llm_asked_for(trained, tmp_path):
    cmd = _printed_command(trained["stdout"])
    model_uri = next(a.split("=", 1)[1] for a in cmd if a.startswith("model_uri="))
    prompts_file = next(a.split("=", 1)[1] for a in cmd if a.startswith("prompts="))
    prompts = pd.read_csv(prompts_file, dtype=str)["prompt"].tolist()[:8]
    # predict.py's answers for two known LLMs on the same prompts
    pd.DataFrame({"prompt": prompts}).to_csv(tmp_path / "p.csv", index=False)
    summary = json.loads(_run([sys.executable, "predict.py", *[a for a in cmd[2:] if not a.startswith("prompts=")],
                               f"prompts={tmp_path / 'p.csv'}", f"out={tmp_path / 'scores.csv'}"]).stdout)
    llms = summary["llms"][:2]
    scores = pd.read_csv(tmp_path / "scores.csv")
    want = {n: scores[scores["llm"] == n]["p_success"].to_numpy() for n in llms}
    assert np.abs(want[llms[0]] - want[llms[1]]).max() > 1e-4  # the comparison can tell LLMs apart

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{trained['outputs'] / 'mlflow.db'}"}
    log = open(tmp_path / "serve.log", "w")
    mlflow_cli = Path(sys.executable).with_name("mlflow")
    proc = subprocess.Popen([str(mlflow_cli), "models", "serve", "-m", model_uri, "--env-manager", "local",
                             "-h", "127.0.0.1", "-p", str(port)], stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        import httpx

        url = f"http://127.0.0.1:{port}"
        for _ in range(240):
            if proc.poll() is not None:
                pytest.fail(f"mlflow models serve exited: {(tmp_path / 'serve.log').read_text()[-3000:]}")
            try:
                if httpx.get(f"{url}/ping", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        else:
            pytest.fail("mlflow models serve did not answer /ping in 2 minutes")

        def invoke(params):
            body = {"dataframe_split": {"columns": ["prompt"], "data": [[p] for p in prompts]}, "params": params}
            return httpx.post(f"{url}/invocations", json=body, timeout=120)

        for name in llms:
            r = invoke({"llm": name})
            assert r.status_code == 200, r.text
            got = np.array([row["p_success"] for row in r.json()["predictions"]])
            np.testing.assert_allclose(got, want[name], atol=1e-6)
        bad = invoke({"llm": "no-such-llm"})
        assert bad.status_code == 400 and "unknown LLM 'no-such-llm'" in bad.text
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
