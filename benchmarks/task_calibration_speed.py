"""How long calibrating a new task takes: 500 prompts of a held-out task from 20 known LLMs x 30 prompts; prints JSON.

In-process as ``python train.py assessor=latent split=<split>`` (the default latent model, 3 members),
then with the real answers of 20 random training LLMs on 30 random held-out prompts:

* ``calibrate_s``: :class:`~assessors.task_calibration.calibration.TaskCalibration` on 500 held-out prompts
  (features given: what the goal of at most 10 s is about), ``--repeats`` times;
* ``end_to_end_s``: what ``predict.py mode=calibrate_task`` and ``POST /v1/tasks/calibrate`` do after
  their checks: the prompts embedded by the model's featurizer without its disk cache (``embed_s``),
  then :func:`~assessors.onboarding.task_onboarding.calibrate_and_log` into an existing MLflow store
  (``calibrate_and_log_s``: ``new_store`` is the first call, which also creates the store).

    python benchmarks/task_calibration_speed.py --split ood_logic --seed 0
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's package, not another installed copy
sys.path.insert(0, str(ROOT / "benchmarks"))

from latent_quality import compose  # noqa: E402


def arguments(doc: str, k: int = 30, **extra) -> argparse.Namespace:
    """The split, seed and calibration task's size (``--prompts``, ``--llms``, ``--k``), plus ``extra``
    integer options with their defaults."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--split", default="ood_logic")
    ap.add_argument("--seed", type=int, default=0)
    for name, default in {"prompts": 500, "llms": 20, "k": k, **extra}.items():
        ap.add_argument(f"--{name}", type=int, default=default)
    return ap.parse_args()


def calibration_task(a: argparse.Namespace):
    """The default latent model fitted as ``train.py`` does, and a task to calibrate it on: ``a.prompts``
    random held-out prompts ``X`` (task: their rows in the test prompts), the real answers ``Y``
    (a.llms, a.prompts) of ``a.llms`` random training LLMs (``rows``) on ``a.k`` of them (NaN elsewhere).

    Returns ``(cfg, prep, ref_ids, model, fit_s, task, X, Y, rows)``.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from hydra.utils import instantiate

    from assessors.tasks.prepare import fit_selector, prepare

    cfg = compose([f"seed={a.seed}", "assessor=latent", "tracking=none", "plots=false", f"split={a.split}"])
    prep = prepare(cfg)
    selector = fit_selector(instantiate(cfg.selector), prep)
    ref_ids, ref_idx = selector.reference_ids_, np.asarray(selector.reference_index_)
    t0 = time.perf_counter()
    model = instantiate(cfg.assessor).fit(prep.X["train"], prep.S("train", "train"), ref_idx,
                                          validation=prep.validation(ref_ids))
    fit_s = time.perf_counter() - t0
    rng = np.random.default_rng(a.seed)
    task = np.sort(rng.choice(len(prep.X["test"]), a.prompts, replace=False))
    X, S_known = prep.X["test"][task], prep.S("train", "test")[:, task]
    rows = np.sort(rng.choice(len(S_known), a.llms, replace=False))
    cal = rng.choice(a.prompts, a.k, replace=False)
    Y = np.full((a.llms, a.prompts), np.nan)
    Y[:, cal] = S_known[np.ix_(rows, cal)]
    return cfg, prep, ref_ids, model, fit_s, task, X, Y, rows


def main() -> None:
    a = arguments(__doc__, repeats=3)
    from hydra.utils import instantiate

    from assessors.core.pyfunc import AssessorModel
    from assessors.onboarding.task_onboarding import calibrate_and_log
    from assessors.task_calibration.calibration import TaskCalibration
    from assessors.tracking import MlflowTracker

    cfg, prep, ref_ids, model, fit_s, task, X, Y, rows = calibration_task(a)
    times = []
    for _ in range(a.repeats):
        t0 = time.perf_counter()
        tc = TaskCalibration(model).fit(X, Y, rows)
        times.append(round(time.perf_counter() - t0, 3))
    featurizer = instantiate(cfg.features).set_params(cache_dir=None, show_progress=False)
    texts = prep.results.prompts([prep.inst["test"][i] for i in task])
    served = AssessorModel(model, featurizer, list(ref_ids), prep.results.matrix(prep.llms["train"], ref_ids),
                           list(prep.llms["train"]))
    with tempfile.TemporaryDirectory() as tmp:
        tracker = MlflowTracker(db_path=f"{tmp}/mlflow.db", artifact_root=f"{tmp}/artifacts")
        t0 = time.perf_counter()
        X_e2e = featurizer.transform(texts)
        embed_s = time.perf_counter() - t0
        logged = []  # the first creates the MLflow store (its schema migrations), the second logs to it
        for _ in range(2):
            t0 = time.perf_counter()
            out = calibrate_and_log(served, [str(i) for i in task], texts, X_e2e, list(rows), Y, tracker,
                                    register_as="speed")
            logged.append(round(time.perf_counter() - t0, 2))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    print(json.dumps({"commit": commit, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                      "machine": f"{os.cpu_count()} cores", "load": os.getloadavg(), "split": a.split, "seed": a.seed,
                      "prompts": a.prompts, "llms": a.llms, "k": a.k, "fit_s": round(fit_s, 1),
                      "report": tc.report(), "calibrate_s": times, "embed_s": round(embed_s, 2),
                      "calibrate_and_log_s": {"new_store": logged[0], "existing_store": logged[1]},
                      "end_to_end_s": round(embed_s + logged[1], 2), "calibrated": out["calibrated"]}, indent=2))


if __name__ == "__main__":
    main()
