"""One cell of the OOD sweep: a split preset at one seed, every method at every calibration budget.

The cell fits the latent assessor (``assessor=latent``) and the baselines once on the preset's split.
When the preset holds out a task (its ``split`` names ``test_groups``), ``k`` random prompts of the
held-out task are answered by the training LLMs (their real answers) for each budget ``k``; the
calibration sets are nested (the first ``k`` of one seeded permutation) and every budget is scored on
the same prompts, the held-out prompts outside the largest set, so that AUC against ``k`` is a curve.
Methods given the calibration answers:

* ``latent``: :class:`~assessors.task_calibration.calibration.TaskCalibration` on the ``k`` prompts (``k = 0``:
  the model as trained);
* ``all_train_data``: the "all train data" baseline refitted with the ``k`` prompts appended (the
  classifier its grid chose at ``k = 0`` on the validation LLMs, refitted alone);
* ``reference_only``, ``specific``, ``paper_generic``: unchanged by calibration answers (the test LLMs
  never answer them), scored on the same prompts at every budget.

Beside the raw latent model, ``served`` is what ``predict.py`` would serve each test LLM at that budget:
the latent model (calibrated at ``k > 0``, its prompt-side signal told the calibrated prompts, as
``predict.py mode=calibrate_task`` stores it) with the trust parts ``train.py`` fits, through
``train.py``'s serving path (:func:`~assessors.tasks.train.serve_test_llms`): each LLM's trust verdict
may switch it to a fallback.

A preset that holds out LLMs (frontier, KindsOfReasoning, RouterBench leave-one-LLM-out) has no new
task: only ``k = 0``. Test LLMs enter by their reference answers; nothing reads their answers on the
scored prompts except to score.
"""
from __future__ import annotations

import logging
from functools import lru_cache

import numpy as np
import pandas as pd
from hydra.utils import instantiate
from omegaconf import OmegaConf
from sklearn.base import clone

from assessors.metrics import ece, per_llm_auc
from assessors.tasks.prepare import Prepared, fit_assessor, fit_generic, prepare
from assessors.tasks.timing import stage
from assessors.tasks.served import Served, band_holds
from assessors.tasks.train import all_train_data_assessor, fit_per_llm, serve_test_llms
from assessors.tasks.train_trust import fit_trust_parts
from assessors.tasks.wrapper import PAPER
from assessors.threads import fit_threads, thread_limits

log = logging.getLogger(__name__)

#: The columns of a cell's long table (one row per method and budget; ``group`` is set on the
#: in-distribution preset's rows scored on one hold-out's subtasks).
COLUMNS = ["method", "k", "group", "auc", "ece", "band", "n_llms", "n_prompts", "below_chance", "fallback"]
#: The method name of the latent assessor as served (after each test LLM's trust verdict).
SERVED = "served"


def load_data(cfg):
    """``cfg.data`` built (a :class:`~assessors.data.results.Results`), or the same data this process
    loaded last; :func:`~assessors.tasks.prepare.prepare` only reads it."""
    return _built_data(OmegaConf.to_yaml(cfg.data, resolve=True))


# a Dask worker runs several cells in turn and a leave-one-LLM-out cell one fold per LLM, most on the same
# data, and loading it is ~10 s each time; one data set at a time: the cells run preset by preset
@lru_cache(maxsize=1)
def _built_data(data_yaml: str):
    """The data config ``data_yaml`` (resolved YAML, the cache key) built."""
    return instantiate(OmegaConf.create(data_yaml))


def loaded(cfg, times: dict):
    """:func:`load_data`, timed into ``times["load_s"]`` (about 0 when this process had the data)."""
    with stage(times, "load_s"):
        return load_data(cfg)


def held_out_groups(cfg) -> list[str] | None:
    """The subtask globs a split preset holds out (None for a preset that holds out LLMs)."""
    groups = OmegaConf.select(cfg, "split.test_groups", default=None)
    return list(groups) if groups else None


def scores(S: np.ndarray, P: np.ndarray) -> dict[str, float]:
    """Mean per-LLM AUC and ECE of predictions ``P`` for successes ``S``, both (n_llms, n_prompts);
    ``below_chance``: the share of LLMs whose AUC is below 0.5."""
    auc = per_llm_auc(S, P)
    eces = [ece(s[np.isfinite(s)], p[np.isfinite(s)]) for s, p in zip(S, P)]
    return {"auc": float(np.nanmean(auc)), "ece": float(np.nanmean(eces)),
            "below_chance": float(np.mean(auc[np.isfinite(auc)] < 0.5)) if np.isfinite(auc).any() else np.nan}


def band_coverage(model, X: np.ndarray, post, S: np.ndarray) -> float:
    """Share of LLMs whose realised accuracy on prompts ``X`` (n, d) lies in their 90% band."""
    band = model.predictive_accuracy(X, post, level=0.9)
    real = np.nanmean(S, axis=1)
    return float(((band["low"] <= real) & (real <= band["high"])).mean())


def trust_parts(cfg, prep: Prepared, model, ref_ids: list[str], times: dict) -> dict | None:
    """What ``train.py`` fits for trust beside the latent model (its prompt-side signal, its trust policy
    and OOD fallback chosen on the validation LLMs and training prompts), timed into ``times``; None
    when the cell does not report the served predictor (``grid.served`` false)."""
    if not cfg.grid.served:
        return None
    with stage(times, "trust_fit_s"):
        return {**fit_trust_parts(cfg, prep, model, ref_ids), "reference_ids": ref_ids}


def fit_cell(cfg) -> tuple[dict, Prepared, object, list[str], dict | None]:
    """What every cell fits first, timed: the prepared split, the latent assessor with its reference ids and
    :func:`trust_parts`. Returns ``(wall times in s, prepared, model, reference ids, trust parts or None)``."""
    t = {}
    with stage(t, "prepare_s"):
        prep = prepare(cfg, loaded(cfg, t))
    with stage(t, "latent_fit_s"):
        model, ref_ids = fit_generic(cfg, prep)
    return t, prep, model, ref_ids, trust_parts(cfg, prep, model, ref_ids, t)


def served_row(cfg, prep: Prepared, fitted: dict, latent, X: np.ndarray, S: np.ndarray,
               calibrated: np.ndarray | None = None) -> dict:
    """The scores of the latent assessor ``latent`` as served to the test LLMs on prompts ``X`` (n, d).

    ``fitted``: :func:`~assessors.tasks.train_trust.fit_trust_parts`'s trust parts; ``calibrated``
    (n_cal, d): prompts ``latent`` was calibrated on, added to the prompt-side signal's index as
    :func:`~assessors.onboarding.task_onboarding.adapted_prompt_ood` does for a calibrated model.
    ``S``: successes (n_test_llms, n). Returns ``auc``, ``ece``, ``below_chance`` as :func:`scores`,
    ``band`` (share of test LLMs whose accuracy lies in the served 90% band) and ``fallback`` (share of
    test LLMs switched to a fallback).
    """
    from assessors.onboarding.task_onboarding import adapted_prompt_ood

    parts = {**fitted, "generic": latent}
    if calibrated is not None:
        parts["prompt_ood"] = adapted_prompt_ood(fitted.get("prompt_ood"), calibrated)
    served = serve_test_llms(cfg, prep, parts, X=X)
    llms = prep.llms["test"]
    return {**scores(S, served.P), "band": served_band(served, S, llms),
            "fallback": float(np.mean([served.predictor[llm] != "assessor" for llm in llms]))}


def served_band(served: Served, S: np.ndarray, llms: list[str]) -> float:
    """Share of the LLMs ``llms`` whose accuracy on ``S`` (n_llms, n; NaN: not graded) lies in the 90%
    band of the predictor served to them (NaN when no report gives one). The in-band column of
    :func:`~assessors.tasks.served.served_table` without its per-LLM metrics, which no row reads."""
    holds = [band_holds(served.trust.get(llm), S[k])[1] for k, llm in enumerate(llms)]
    inside = [float(h) for h in holds if h is not None]
    return float(np.mean(inside)) if inside else np.nan


def fit_all_train_data(cfg, prep: Prepared, X: np.ndarray, S: np.ndarray, chosen=None):
    """The "all train data" baseline fitted on prompts ``X`` (n, d) with the training LLMs' answers ``S``.

    ``chosen``: an earlier fit of it on the same split; its selected classifier is refitted alone
    instead of the whole candidate grid. The choice is made on the validation LLMs' answers on the
    validation prompts, which appended calibration prompts of a held-out task do not change, so only
    the training rows differ from a fresh selection.
    """
    base = all_train_data_assessor(cfg, fit_threads(threads=cfg.get("threads")))
    if chosen is not None:
        from assessors.classifiers.grid import ParamGrid

        winner = dict(chosen.classifier.candidates())[chosen.classifier_name_]
        return clone(base).set_params(classifier=ParamGrid(winner)).fit(X, S, np.array([], dtype=int))
    val = None
    if prep.llms["val"]:
        val = (prep.X["val"], prep.S("val", "val"), np.zeros((len(prep.llms["val"]), 0), np.float32))
    return base.fit(X, S, np.array([], dtype=int), validation=val)


def fixed_baselines(cfg, prep: Prepared, t: dict, ref_ids, scored: np.ndarray, baselines) -> dict:
    """The baselines the calibration answers do not change, fitted once per cell: their P(success)
    (n_test_llms, len(scored)) on the scored test prompts ``scored``, by method; ``t`` gets their wall times."""
    fixed = {}
    ref_pos = prep.results.instance_index(ref_ids)
    X_ref = prep.X["train"][pd.Index(prep.inst["train"]).get_indexer(ref_ids)]
    for method in ("reference_only", "specific"):
        if baselines.get(method):
            with stage(t, f"{method}_fit_s"):
                fixed[method] = fit_per_llm(cfg, prep, method, X_ref, ref_pos)[:, scored]
    if baselines.get("paper_generic"):
        # train.py's column: its own node (the depth-6 XGBoost with shared bins and early stopping) on the
        # latent assessor's reference set
        with stage(t, "paper_generic_fit_s"):
            ref_idx = pd.Index(prep.inst["train"]).get_indexer(ref_ids)
            paper = fit_assessor(cfg, prep, ref_idx, ref_ids, assessor_cfg=cfg[PAPER])
            fixed["paper_generic"] = paper.predict_proba(prep.X["test"][scored],
                                                         prep.results.matrix(prep.llms["test"], ref_ids))
    return fixed


def evaluate_split(cfg, budgets, baselines) -> tuple[pd.DataFrame, dict]:
    """Every method at every budget on the split ``cfg`` describes.

    Parameters
    ----------
    cfg : DictConfig
        A composed ``train`` config with ``assessor=latent`` and the preset's overrides.
    budgets : sequence of int
        Calibration budgets ``k`` (prompts of the held-out task); ignored without a held-out task.
    baselines : Mapping[str, bool]
        Which of ``reference_only``, ``all_train_data``, ``specific``, ``paper_generic`` to fit.

    Returns
    -------
    (DataFrame with :data:`COLUMNS` but ``group``, dict of wall times in s)
    """
    from assessors.tasks.calibrate_task import task_calibration

    t, prep, model, ref_ids, fitted = fit_cell(cfg)
    X_te, S_test = prep.X["test"], prep.S("test", "test")
    R_test = prep.results.matrix(prep.llms["test"], ref_ids)
    n = len(X_te)
    ks = sorted({int(k) for k in budgets} | {0}) if held_out_groups(cfg) else [0]
    ks = [k for k in ks if k <= n // 2]  # at least half of the task stays to be scored
    perm = np.random.default_rng(1000 + int(cfg.seed)).permutation(n)
    scored = np.sort(perm[max(ks):])
    S_sc, X_sc = S_test[:, scored], X_te[scored]

    # their scores too: the same at every budget
    fixed = fixed_baselines(cfg, prep, t, ref_ids, scored, baselines)
    fixed = {method: scores(S_sc, P) for method, P in fixed.items()}
    S_known = prep.S("train", "test")  # the training LLMs' answers on the held-out prompts
    rows, common = [], {"n_llms": len(prep.llms["test"]), "n_prompts": len(scored)}
    first = None  # the "all train data" fit at k = 0: its choice of classifier is kept at every budget
    calibration = task_calibration(cfg)
    for k in ks:
        cal = np.sort(perm[:k])
        latent, calibrated = model, None
        if k:
            Y = np.full(S_known.shape, np.nan)
            Y[:, cal] = S_known[:, cal]
            # one BLAS and torch thread, as for the served rows: on these small matrices a second thread
            # spins at every barrier (a cell alone on 2 cores: the k = 100 calibration of ood_logic took
            # 22.2 s of CPU against 1.3 s at one thread, the same table; docs/ood_sweep.md#time)
            with stage(t, f"calibrate_k{k}_s"), thread_limits(1):
                tc = calibration(model).fit(X_te, Y, np.arange(len(prep.llms["train"])))
            latent, calibrated = tc.model_, X_te[tc.status_ == "calibrated"]
        P = latent.predict_proba(X_sc, R_test)
        band = band_coverage(latent, X_sc, latent.reference_posterior(R_test), S_sc)
        rows.append({"method": "latent", "k": k, **scores(S_sc, P), "band": band, **common})
        if fitted is not None:
            with stage(t, f"served_k{k}_s"), thread_limits(1):
                rows.append({"method": SERVED, "k": k, **common,
                             **served_row(cfg, prep, fitted, latent, X_sc, S_sc, calibrated)})
        if baselines.get("all_train_data"):
            with stage(t, f"all_train_data_k{k}_fit_s"):
                X_fit = np.vstack([prep.X["train"], X_te[cal]])
                S_fit = np.hstack([prep.S("train", "train"), S_known[:, cal]])
                base = fit_all_train_data(cfg, prep, X_fit, S_fit, chosen=first)
                first = base if first is None else first
                P = base.predict_proba(X_sc, np.zeros((len(prep.llms["test"]), 0), np.float32))
            rows.append({"method": "all_train_data", "k": k, **scores(S_sc, P), "band": np.nan, **common})
        for method, sc in fixed.items():
            rows.append({"method": method, "k": k, **sc, "band": np.nan, **common})
    return pd.DataFrame(rows), {**prep.timings, **t}


def in_distribution_by_group(cfg, groups: dict[str, list[str]]) -> tuple[pd.DataFrame, dict]:
    """The latent assessor on the split ``cfg`` (a random split) scored on its test prompts of each
    hold-out's subtasks: ``groups`` maps a hold-out preset to its subtask globs. The served predictor
    is scored on all test prompts only."""
    import fnmatch

    t, prep, model, ref_ids, fitted = fit_cell(cfg)
    sub = prep.results.instances["subgroup"].astype(str).to_numpy()[prep.results.instance_index(prep.inst["test"])]
    R_test = prep.results.matrix(prep.llms["test"], ref_ids)
    post = model.reference_posterior(R_test)
    rows = []
    for name, pats in [(None, ["*"]), *groups.items()]:
        keep = np.array([any(fnmatch.fnmatch(g, p) for p in pats) for g in sub])
        if not keep.any():
            continue
        X, S = prep.X["test"][keep], prep.S("test", "test")[:, keep]
        P = model.predict_proba(X, R_test)
        common = {"k": 0, "group": name, "n_llms": len(S), "n_prompts": int(keep.sum())}
        rows.append({"method": "latent", **scores(S, P), "band": band_coverage(model, X, post, S), **common})
        # the report compares a hold-out with the raw model on its subtasks only: serving every test LLM
        # again per hold-out (a trust report about each one's prompts) would feed no table
        if fitted is not None and name is None:
            with stage(t, "served_s"), thread_limits(1):
                rows.append({"method": SERVED, **served_row(cfg, prep, fitted, model, X, S), **common})
    return pd.DataFrame(rows), {**prep.timings, **t}


def leave_one_llm_out(cfg, budgets, baselines) -> tuple[pd.DataFrame, dict]:
    """Each LLM of the data in turn is the test LLM (the next one in name order validates, the rest
    train); the folds' rows pooled by LLM-weighted means, as one split with every LLM tested once."""
    llms = sorted(load_data(cfg).llms)
    folds, t = [], {}
    for i, llm in enumerate(llms):
        fold = OmegaConf.merge(cfg, {"llm_split": {"train": None, "val": [llms[(i + 1) % len(llms)]], "test": [llm]}})
        df, ti = evaluate_split(fold, budgets, baselines)
        folds.append(df)
        for key, v in ti.items():
            t[key] = t.get(key, 0.0) + v
        log.info("leave-one-LLM-out fold %d/%d (%s) done", i + 1, len(llms), llm)
    long = pd.concat(folds, ignore_index=True).reindex(columns=COLUMNS)
    agg = long.groupby(["method", "k"], as_index=False).agg(
        auc=("auc", "mean"), ece=("ece", "mean"), band=("band", "mean"), n_llms=("n_llms", "sum"),
        n_prompts=("n_prompts", "mean"), below_chance=("below_chance", "mean"), fallback=("fallback", "mean"))
    return agg, t
