"""``predict.py mode=calibrate_task``: adapt a trained latent assessor to a new task and log it as a new model.

Input (``calibrate_task:`` in ``conf/predict.yaml``): the new task's prompt files (``prompts``, every
prompt of the task, calibrated or not) and the calibration answers (``answers``: a CSV ``llm,
instance_id, success`` with graded answers of LLMs the model was trained on, 0/1 or empty). The
model's item parameters on the task's prompts are calibrated against those LLMs' abilities
(:class:`~assessors.task_calibration.calibration.TaskCalibration`) and the adapted model is logged to MLflow
as a new pyfunc model (``register_as``: also a new version of that registered model). Output: the
JSON summary (model URI, version, per-status counts) and, as run artifacts, each prompt's status.
The checks, the calibration and the logging are :mod:`assessors.onboarding.task_onboarding`'s (shared
with ``POST /v1/tasks/calibrate``); how the model is calibrated is the ``task_calibration`` config group's
(``conf/task_calibration/``), built by :func:`task_calibration`.
"""
from __future__ import annotations

import logging
from pathlib import Path

from omegaconf import DictConfig

from assessors.data.columns import require_columns
from assessors.data.loaders._common import read_csv
from assessors.data.prompts import read_prompt_files
from assessors.errors import ConfigError
from assessors.onboarding.task_onboarding import Rows, calibrate_and_log, check_task
from assessors.tasks.config import built, tracker_from_cfg
from assessors.tasks.predict_common import report, tracking_uri_from_cfg

log = logging.getLogger("assessors.predict")

def task_calibration(cfg: DictConfig):
    """``cfg.task_calibration`` built: ``assessor -> TaskCalibration`` (a partial of the class its ``_target_``
    names; the group is in the defaults of ``train.py`` and ``predict.py``)."""
    return built(cfg.task_calibration)


def run(cfg: DictConfig, model=None) -> dict:
    """Calibrate ``calibrate_task.prompts`` on ``calibrate_task.answers`` and log the adapted model."""
    from assessors.routing.engine import load_assessor_model

    ct = cfg.calibrate_task
    if not ct.get("prompts") or not ct.get("answers"):
        raise ConfigError("mode=calibrate_task needs calibrate_task.prompts=[the new task's prompt files] and "
                          "calibrate_task.answers=<CSV llm,instance_id,success>")
    model = model if model is not None else load_assessor_model(cfg.model_uri, tracking_uri_from_cfg(cfg))
    prompts = read_prompt_files(list(ct.prompts), required=())
    ids = prompts["instance_id"].tolist()  # unique: read_prompt_files refuses a repeated id
    texts = prompts["prompt"].astype(str).tolist()
    df = read_csv(Path(ct.answers), dtype=str, keep_default_na=False)
    require_columns(df, ("llm", "instance_id", "success"), str(ct.answers))
    llm_rows, Y = check_task(model, ids, texts, df, (Rows("prompt rows"), Rows("data rows")), int(ct.min_answers),
                             where=f"{ct.answers}: ")
    X = model.featurizer.transform(texts)
    summary = calibrate_and_log(model, ids, texts, X, llm_rows, Y, tracker_from_cfg(cfg), int(ct.min_answers),
                                source_uri=cfg.get("model_uri"), register_as=ct.get("register_as"),
                              calibration=task_calibration(cfg))
    summary.pop("items")  # logged with the run
    if summary["prior_only"]:
        log.warning("no prompt of the task has %d answers: the adapted model is the trained one (prior only)",
                    int(ct.min_answers))
    return report(summary)
