"""Onboarding a new task onto a logged latent model: calibration answers in, an adapted model out.

Shared by ``predict.py mode=calibrate_task`` (answers from a CSV) and ``POST /v1/tasks/calibrate``
(answers in JSON): both give the task's prompts ``(instance_id, prompt)`` and the calibration answers
as a long table ``(llm, instance_id, success)``. Here they are checked (each refusal names the
offending rows and the fix), turned into the matrix :class:`~assessors.task_calibration.calibration.TaskCalibration`
takes, calibrated against the known LLMs' abilities, and the adapted model is logged as a new MLflow
pyfunc model (optionally the next version of a registered model).

The adapted model's prompt-side out-of-distribution signal also indexes the calibrated prompts: the
item model has now seen answers there, so a new LLM's trust report on the task judges the adapted
predictions instead of switching to the out-of-distribution fallback for every task prompt.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from assessors.errors import DataError


@dataclass
class Rows:
    """How refusals name rows: ``label`` (e.g. ``data rows``, ``answers``) and the number of the first
    row (1 for a CSV's data rows, 0 for a JSON list's positions)."""

    label: str
    first: int = 1

    def refuse(self, bad: np.ndarray, what: str, fix: str, where: str = "") -> None:
        """Raise :class:`DataError` naming the rows where ``bad`` (n,) is True; nothing when none is."""
        bad = np.asarray(bad, dtype=bool)
        if not bad.any():
            return
        rows = np.flatnonzero(bad) + self.first
        more = " ..." if len(rows) > 10 else ""
        raise DataError(f"{where}{self.label} {rows[:10].tolist()}{more} ({int(bad.sum())} of {len(bad)}) {what}; {fix}")


def check_task_prompts(ids: list[str], texts: list[str], rows: Rows, where: str = "") -> None:
    """Refuse blank prompts (nothing to featurize) and repeated ids, naming the rows."""
    text = pd.Series([str(t) for t in texts])
    rows.refuse(text.str.strip().eq("").to_numpy(), "have a blank prompt (nothing to featurize)",
                "drop those prompts or give their text", where)
    rows.refuse(pd.Series(ids).duplicated().to_numpy(), "repeat an instance id", "give each prompt one id", where)


def answer_matrix(answers: pd.DataFrame, known_llms: list[str], task_ids: list[str], rows: Rows,
                  where: str = "") -> tuple[list[int], np.ndarray]:
    """The calibration answers ``answers`` (columns ``llm, instance_id, success``) as known-LLM rows and a matrix.

    ``success`` holds 0/1, or missing (None, NaN, empty or blank text) for "not graded".

    Returns
    -------
    llm_rows : list of int, length k
        Positions in ``known_llms`` of the LLMs that answered, in order of first appearance.
    Y : ndarray of shape (k, len(task_ids))
        0/1, NaN where not answered.

    Raises
    ------
    DataError
        Naming the rows and the fix: LLMs the model does not know, ids not among the task's prompts,
        values other than 0/1/missing, repeated (llm, instance_id) pairs.
    """
    llm, ids = answers["llm"].astype(str), answers["instance_id"].astype(str)
    known = {name: i for i, name in enumerate(known_llms)}
    unknown = ~llm.isin(known).to_numpy()
    example = repr(llm[unknown].iloc[0]) if unknown.any() else ""
    rows.refuse(unknown, f"name LLMs this model was not trained on (e.g. {example})",
                f"calibration answers come from its {len(known_llms)} training LLMs (e.g. {known_llms[:3]}); "
                "drop those rows", where)
    pos = {i: j for j, i in enumerate(task_ids)}
    rows.refuse(~ids.isin(pos).to_numpy(), "name ids not among the task's prompts",
                f"give the prompts the answers were made from (their ids look like {task_ids[:3]})", where)
    raw = answers["success"]
    text = raw.astype(str).str.strip()
    empty = (raw.isna() | text.isin(["", "nan", "NaN", "None"])).to_numpy()
    value = pd.to_numeric(text.where(~empty, "nan"), errors="coerce").to_numpy(dtype=float)
    rows.refuse(~empty & ~np.isin(value, (0.0, 1.0)), "have a success other than 0, 1 or missing",
                "threshold graded scores (e.g. success = score >= 0.5) first", where)
    rows.refuse(pd.DataFrame({"l": llm, "i": ids}).duplicated(keep="first").to_numpy(),
                "repeat an (llm, instance_id) pair", "keep one answer per LLM and prompt", where)
    names = list(dict.fromkeys(llm))
    Y = np.full((len(names), len(task_ids)), np.nan)
    r = llm.map({n: i for i, n in enumerate(names)}).to_numpy()
    c = ids.map(pos).to_numpy()
    Y[r[~empty], c[~empty]] = value[~empty]
    return [known[n] for n in names], Y


def require_enough(Y: np.ndarray, min_answers: int, task_ids: list[str], rows: Rows, where: str = "") -> None:
    """Refuse answers of which no prompt has ``min_answers`` (the adapted model would be the trained one),
    naming the answered prompts (their rows among the task's prompts) and how many answers each has."""
    n = np.isfinite(Y).sum(0)
    if (n >= int(min_answers)).any():
        return
    answered = np.flatnonzero(n)
    shown = ", ".join(f"{task_ids[j]!r}: {int(n[j])}" for j in answered[:5]) + (" ..." if len(answered) > 5 else "")
    raise DataError(f"{where}too few answers: no prompt has {int(min_answers)} ({rows.label} "
                    f"{(answered[:10] + rows.first).tolist()} have {{{shown}}}); answer each calibrated prompt with at "
                    f"least {int(min_answers)} known LLMs, or lower min_answers")


def calibrate_model(model, X: np.ndarray, llm_rows: list[int], Y: np.ndarray, min_answers: int = 5,
                    calibration=None):
    """Calibrate the latent assessor of ``model`` (an :class:`~assessors.core.pyfunc.AssessorModel`) on the
    task's prompt features ``X`` (n, d) and the answers ``Y`` (k, n) of its known LLMs ``llm_rows`` (k,).

    ``calibration``: ``assessor, min_answers=... -> TaskCalibration`` (``conf/task_calibration/``'s
    partial, built by the task layer); None: :class:`~assessors.task_calibration.calibration.TaskCalibration`'s
    defaults. The known LLMs' abilities are their posterior from all their training answers when the
    model ships it (``known_states``), else their training abilities. Returns the fitted calibration.
    """
    if calibration is None:
        from assessors.task_calibration.calibration import TaskCalibration as calibration

    known = getattr(model, "known_states", None)
    theta = None if known is None else np.concatenate([known[i].theta for i in llm_rows], 1)
    return calibration(model.assessor, min_answers=int(min_answers)).fit(X, Y, llm_rows, theta)


def adapted_prompt_ood(prompt_ood, X_calibrated: np.ndarray):
    """The prompt-side signal of a model calibrated on prompts ``X_calibrated`` (n_cal, d): a
    :class:`~assessors.onboarding.calibrated_prompt_ood.CalibratedPromptOOD` copy of the fitted
    :class:`~assessors.trust.prompt_ood.PromptOOD`, under which prompts as close to the calibrated prompts
    as these are to each other are familiar. None stays None."""
    if prompt_ood is None or not len(X_calibrated):
        return prompt_ood
    from assessors.onboarding.calibrated_prompt_ood import CalibratedPromptOOD

    return CalibratedPromptOOD.from_fitted(prompt_ood, X_calibrated)


def check_task(model, ids: list[str], texts: list[str], answers: pd.DataFrame, rows: tuple[Rows, Rows],
               min_answers: int = 5, require_calibrated: bool = False, where: str = "") -> tuple[list[int], np.ndarray]:
    """Every check before featurizing: the prompts (``rows[0]`` names them) and the answers (``rows[1]``);
    with ``require_calibrated``, too few answers are refused too (else the model says "prior only").
    Returns :func:`answer_matrix`'s ``(llm_rows, Y)``."""
    model.assessor.require_posterior("calibrating a task")
    check_task_prompts(ids, texts, rows[0], where)
    llm_rows, Y = answer_matrix(answers, list(model.llms), ids, rows[1], where)
    if require_calibrated:
        require_enough(Y, min_answers, ids, rows[0], where)
    return llm_rows, Y


def calibrate_and_log(model, ids: list[str], texts: list[str], X: np.ndarray, llm_rows: list[int], Y: np.ndarray,
                      tracker, min_answers: int = 5, source_uri: str | None = None,
                      register_as: str | None = None, calibration=None) -> dict:
    """Calibrate (:func:`calibrate_model`, with ``calibration``) and log (:func:`log_adapted`) a checked
    task (:func:`check_task`).

    Returns the summary: ``task_prompts``, ``calibration_llms``, the :meth:`TaskCalibration.report` counts,
    ``model_uri``, ``registered`` and ``items`` (the per-prompt table, also logged with the run).
    """
    tc = calibrate_model(model, X, llm_rows, Y, min_answers, calibration)
    items = pd.DataFrame({"instance_id": ids, "status": tc.status_, "n_answers": tc.n_answers_})
    summary = {"task_prompts": len(ids), "calibration_llms": len(llm_rows), **tc.report()}
    uri, registered = log_adapted(tracker, model, tc, X, texts, items, summary, source_uri, register_as)
    return {**summary, "model_uri": uri, "registered": registered, "items": items}


def log_adapted(tracker, model, tc, X: np.ndarray, texts: list[str], items: pd.DataFrame, summary: dict,
                source_uri: str | None = None, register_as: str | None = None):
    """Log the adapted model as a new pyfunc model through ``tracker`` (``start_run`` as in
    :mod:`assessors.tracking`); ``(model URI, {name, version} or None)``, registered when ``register_as``."""
    from assessors.core.pyfunc import log_assessor_model

    calibrated = np.asarray(X)[tc.status_ == "calibrated"]
    with tracker.start_run("calibrate_task", tags={"source_model": str(source_uri)}) as run:
        uri = log_assessor_model(run, tc.model_, model.featurizer, model.reference_ids, model.reference_success,
                                 model.llms, example_prompts=texts[:2], trust_model=model.trust_model,
                                 trust_policy=getattr(model, "trust_policy", None),
                                 training_prompts=getattr(model, "training_prompts", None),
                                 prompt_ood=adapted_prompt_ood(getattr(model, "prompt_ood", None), calibrated),
                                 known_states=getattr(model, "known_states", None))
        run.log_table(items.set_index("instance_id"), "task_calibration/items.csv")
        run.log_dict(summary, "task_calibration/report.json")
    if not register_as or not uri:
        return uri, None
    import mlflow

    version = mlflow.register_model(uri, register_as)
    return uri, {"name": register_as, "version": int(version.version)}
