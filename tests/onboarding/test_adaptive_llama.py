"""Adaptive onboarding of the real SmolLM2-135M-Instruct (llama-cpp-python server on loopback) with
``predict.py mode=onboard``: a latent assessor fitted on real BBH results picks the prompts; the run
is killed with SIGKILL midway and resumed, and continues the same sequence.

Slow (starts a server): ``python -m pytest tests/onboarding/test_adaptive_llama.py -m slow -q``.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
SUBTASKS = ["bbh_navigate", "bbh_sports_understanding", "bbh_web_of_lies"]
BUDGET = 8
MAX_TOKENS = 8


def _fit_tiny_latent(data_dir, path: Path):
    """A real latent assessor: unigram features, 20 training LLMs, 3 BBH subtasks; saved as an MLflow model."""
    import mlflow.pyfunc

    from assessors.core.latent import LatentAssessor
    from assessors.core.pyfunc import PIP_REQUIREMENTS, AssessorModel
    from assessors.data.loaders.open_llm_leaderboard_v2 import load_open_llm_leaderboard_v2
    from assessors.features.ngrams import UnigramFeaturizer

    res = load_open_llm_leaderboard_v2(root=data_dir, subtasks=SUBTASKS, download=False)
    rng = np.random.default_rng(0)
    ids = list(res.instance_ids)
    llms = [res.llms[i] for i in rng.permutation(len(res.llms))[:20]]
    feat = UnigramFeaturizer(max_features=200).fit(res.prompts(ids))
    X = feat.transform(res.prompts(ids))
    ref = np.sort(rng.choice(len(ids), 30, replace=False))
    latent = LatentAssessor(dims=2, hidden_sizes=(32,), n_members=1, max_epochs=20, patience=3, residual=False,
                            num_threads=1).fit(X, res.matrix(llms, ids), ref)
    model = AssessorModel(latent, feat, [ids[i] for i in ref], res.matrix(llms, [ids[i] for i in ref]), llms)
    mlflow.pyfunc.save_model(str(path), python_model=model, pip_requirements=PIP_REQUIREMENTS)
    return res


def _prompt_files(data_dir, tmp_path) -> list[str]:
    """The subtasks' real prompt files, first 40 rows each (the candidate pool)."""
    out = []
    for t in SUBTASKS:
        df = pd.read_csv(Path(data_dir) / "open_llm_leaderboard_v2" / "prompts" / f"{t}_prompts.csv",
                         dtype=str, keep_default_na=False).head(40)
        p = tmp_path / f"{t}_prompts.csv"
        df.to_csv(p, index=False)
        out.append(str(p))
    return out


def _cmd(model_dir, files, out, base_url, model_name):
    return [sys.executable, "predict.py", "mode=onboard", f"model_uri={model_dir}", f"onboard.prompts=[{','.join(files)}]",
            f"onboard.out_dir={out}", "onboard.strategy=adaptive", f"adaptive.budget={BUDGET}",
            f"onboarding.base_url={base_url}", f"onboarding.model={model_name}", f"onboarding.max_tokens={MAX_TOKENS}",
            "onboarding.concurrency=1", "onboarding.show_progress=false", "onboarding.llm_name=smollm2-135m"]


@pytest.mark.slow
def test_adaptive_onboard_smollm2_kill_and_resume(llama_base_url, llama_model, data_dir, tmp_path):
    model_dir = tmp_path / "model"
    _fit_tiny_latent(data_dir, model_dir)
    files = _prompt_files(data_dir, tmp_path)
    out = tmp_path / "onboard"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    cmd = _cmd(model_dir, files, out, llama_base_url, llama_model)

    # 1) killed with SIGKILL once 3 answers are journaled
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    journal = out / "journal.jsonl"
    deadline = time.monotonic() + 300
    while (not journal.exists() or journal.read_bytes().count(b"\n") < 3) and proc.poll() is None \
            and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, f"predict.py ended before it could be killed:\n{proc.stdout.read().decode()[-3000:]}"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    killed = [json.loads(line)["instance_id"] for line in journal.read_text().splitlines() if line.strip()]
    k = len(killed)
    assert 3 <= k < BUDGET

    # 2) resumed: replays the k journaled answers without asking again, asks the rest
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout[done.stdout.index("{"):])
    assert summary["strategy"] == "adaptive" and summary["n_asked"] == BUDGET
    assert summary["n_queried"] == BUDGET - k, summary
    seq = pd.read_csv(out / "answers.csv")
    assert seq["instance_id"].tolist()[:k] == killed
    assert set(seq["success"].dropna().unique()) <= {0.0, 1.0}
    lo, hi = summary["expected_accuracy_band_90"]
    assert 0 <= lo <= summary["expected_accuracy"] <= hi <= 1
    assert summary["total_tokens"] > 0

    # 3) an uninterrupted run in a fresh directory asks the same sequence (greedy decoding)
    fresh = tmp_path / "fresh"
    again = subprocess.run(_cmd(model_dir, files, fresh, llama_base_url, llama_model), cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    assert pd.read_csv(fresh / "answers.csv")["instance_id"].tolist() == seq["instance_id"].tolist()

    # 4) the journal of another model is refused, and left as it was
    before = journal.read_bytes()
    other = subprocess.run(_cmd(model_dir, files, out, llama_base_url, "another-model"), cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=600)
    assert other.returncode != 0 and "belongs to another onboarding" in other.stderr
    assert journal.read_bytes() == before
    # 5) the onboarded LLM is scored from its directory: answers.csv and the pool files of adaptive.json
    assert summary["llm_spec"] == {"name": "smollm2-135m", "onboarded": str(out.resolve())}
    _score_onboarded(model_dir, files, out, tmp_path, env)
    print(f"\nSmolLM2 adaptive onboarding: {BUDGET} questions, expected accuracy {summary['expected_accuracy']:.3f} "
          f"[{lo:.3f}, {hi:.3f}], answered accuracy {summary['answered_accuracy']}, {summary['total_tokens']} tokens, "
          f"{summary['seconds']:.1f} s after resume")


def _score_onboarded(model_dir, files, out, tmp_path, env):
    """``predict.py mode=score`` with ``llms=[{name, onboarded: <out>}]`` gives the latent posterior's scores."""
    import mlflow.pyfunc

    from assessors.data.evidence_files import read_onboarded

    targets, scores = tmp_path / "targets.csv", tmp_path / "scores.csv"
    prompts = pd.read_csv(files[0], dtype=str, keep_default_na=False)["prompt"].tail(5).tolist()
    pd.DataFrame({"prompt": prompts}).to_csv(targets, index=False)
    done = subprocess.run([sys.executable, "predict.py", "mode=score", f"model_uri={model_dir}", f"prompts={targets}",
                           f"out={scores}", "trust.enabled=false", f"llms=[{{name: smollm2, onboarded: {out}}}]"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    model = mlflow.pyfunc.load_model(str(model_dir)).unwrap_python_model()
    _, texts, y, pool = read_onboarded(out)
    assert pool == [str(Path(f).resolve()) for f in files]
    post = model.assessor.posterior(model.featurizer.transform(texts), y[None, :])
    want = model.assessor.predict_posterior(model.featurizer.transform(prompts), post)[0][0]
    np.testing.assert_allclose(pd.read_csv(scores)["p_success"], want, atol=1e-6)
