"""``predict.py mode=calibrate_task``: adapt a trained latent assessor to a new task and log it as a new model.

Input (``calibrate_task:`` in ``conf/predict.yaml``): the new task's prompt files (``prompts``, every
prompt of the task, calibrated or not) and the calibration answers (``answers``: a CSV ``llm,
instance_id, success`` with graded answers of LLMs the model was trained on, 0/1 or empty). The
model's item parameters on the task's prompts are calibrated against those LLMs' abilities
(:class:`~assessors.core.task_calibration.TaskCalibration`) and the adapted model is logged to MLflow
as a new pyfunc model (``register_as``: also a new version of that registered model). Output: the
JSON summary (model URI, version, per-status counts) and, as run artifacts, each prompt's status.
"""
from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd
from omegaconf import DictConfig

from assessors.data.columns import require_columns
from assessors.data.loaders._common import read_csv
from assessors.data.prompts import read_prompt_files
from assessors.errors import ConfigError, DataError
from assessors.tags import capability
from assessors.tasks.predict_common import report, tracking_uri_from_cfg

log = logging.getLogger("assessors.predict")


def read_calibration_answers(path, known_llms: list[str], task_ids: list[str]) -> tuple[list[int], np.ndarray]:
    """The answers of ``path`` (CSV ``llm, instance_id, success``) as known-LLM rows and a matrix.

    Returns
    -------
    rows : list of int, length k
        Positions in ``known_llms`` of the LLMs that answered, in order of first appearance.
    Y : ndarray of shape (k, len(task_ids))
        0/1, NaN where not answered.

    Raises
    ------
    DataError
        Naming the data rows (1 = the first row after the header) and the fix: LLMs the model does not
        know, ids not in the task's prompt files, values other than 0/1/empty, repeated (llm, id) pairs.
    """
    df = read_csv(Path(path), dtype=str, keep_default_na=False)
    require_columns(df, ("llm", "instance_id", "success"), str(path))
    line = np.arange(1, len(df) + 1)

    def refuse(bad, what: str, fix: str):
        if bad.any():
            rows = line[bad]
            raise DataError(f"{path}: data rows {rows[:10].tolist()}{' ...' if len(rows) > 10 else ''} ({int(bad.sum())} "
                            f"of {len(df)}) {what}; {fix}")

    known = {name: i for i, name in enumerate(known_llms)}
    unknown = ~df["llm"].isin(known).to_numpy()
    refuse(unknown, f"name LLMs this model was not trained on (e.g. {df['llm'][unknown].iloc[0] if unknown.any() else ''!r})",
           f"calibration answers come from its {len(known_llms)} training LLMs (e.g. {known_llms[:3]}); drop those rows")
    pos = {i: j for j, i in enumerate(task_ids)}
    refuse(~df["instance_id"].isin(pos).to_numpy(), "name ids not in the task's prompt files",
           f"pass the prompt files the answers were made from (their ids look like {task_ids[:3]})")
    value = pd.to_numeric(df["success"].str.strip().replace("", "nan"), errors="coerce").to_numpy()
    empty = df["success"].str.strip().isin(["", "nan", "NaN"]).to_numpy()
    refuse(~empty & ~np.isin(value, (0.0, 1.0)), "have a success other than 0, 1 or empty",
           "threshold graded scores (e.g. success = score >= 0.5) first")
    refuse(df.duplicated(["llm", "instance_id"], keep="first").to_numpy(), "repeat an (llm, instance_id) pair",
           "keep one answer per LLM and prompt")
    names = list(dict.fromkeys(df["llm"]))
    Y = np.full((len(names), len(task_ids)), np.nan)
    r = df["llm"].map({n: i for i, n in enumerate(names)}).to_numpy()
    c = df["instance_id"].map(pos).to_numpy()
    Y[r[~empty], c[~empty]] = value[~empty]
    return [known[n] for n in names], Y


def run(cfg: DictConfig, model=None) -> dict:
    """Calibrate ``calibrate_task.prompts`` on ``calibrate_task.answers`` and log the adapted model."""
    from assessors.core.task_calibration import TaskCalibration
    from assessors.routing.engine import load_assessor_model

    ct = cfg.calibrate_task
    if not ct.get("prompts") or not ct.get("answers"):
        raise ConfigError("mode=calibrate_task needs calibrate_task.prompts=[the new task's prompt files] and "
                          "calibrate_task.answers=<CSV llm,instance_id,success>")
    model = model if model is not None else load_assessor_model(cfg.model_uri, tracking_uri_from_cfg(cfg))
    if not capability(model.assessor, "has_posterior"):
        raise ConfigError(f"mode=calibrate_task needs a latent assessor (train with assessor=latent); the model holds "
                          f"{type(model.assessor).__name__}")
    prompts = read_prompt_files(list(ct.prompts), required=())
    ids = prompts["instance_id"].tolist()  # unique: read_prompt_files refuses a repeated id
    rows, Y = read_calibration_answers(ct.answers, model.llms, ids)
    X = model.featurizer.transform(prompts["prompt"].astype(str).tolist())
    known = model.known_states
    theta = None if known is None else np.concatenate([known[i].theta for i in rows], 1)  # from all their answers
    tc = TaskCalibration(model.assessor, min_answers=int(ct.min_answers)).fit(X, Y, rows, theta)
    items = pd.DataFrame({"instance_id": ids, "status": tc.status_, "n_answers": tc.n_answers_})
    summary = {"task_prompts": len(ids), "calibration_llms": len(rows), **tc.report(), "model_uri": None,
               "registered": None}
    summary["model_uri"], summary["registered"] = log_adapted(cfg, model, tc.model_, prompts["prompt"].astype(str).tolist(),
                                                              items, summary)
    if summary["prior_only"]:
        log.warning("no prompt of the task has %d answers: the adapted model is the trained one (prior only)",
                    int(ct.min_answers))
    return report(summary)


def log_adapted(cfg, model, assessor, texts: list[str], items: pd.DataFrame, summary: dict):
    """Log the adapted model as a new pyfunc model; returns its URI and ``{name, version}`` when registered."""
    from assessors.core.pyfunc import log_assessor_model
    from assessors.tasks.config import tracker_from_cfg

    with tracker_from_cfg(cfg).start_run("calibrate_task", tags={"source_model": str(cfg.get("model_uri"))}) as run:
        uri = log_assessor_model(run, assessor, model.featurizer, model.reference_ids, model.reference_success, model.llms,
                                 example_prompts=texts[:2], trust_model=model.trust_model,
                                 trust_policy=getattr(model, "trust_policy", None),
                                 training_prompts=getattr(model, "training_prompts", None),
                                 prompt_ood=getattr(model, "prompt_ood", None),
                                 known_states=model.known_states)
        run.log_table(items.set_index("instance_id"), "task_calibration/items.csv")
        run.log_dict({k: v for k, v in summary.items() if k not in ("model_uri", "registered")},
                     "task_calibration/report.json")
    name = cfg.calibrate_task.get("register_as")
    if not name or not uri:
        return uri, None
    import mlflow

    version = mlflow.register_model(uri, name)
    return uri, {"name": name, "version": int(version.version)}
