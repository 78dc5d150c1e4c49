"""One combination of the paper's grid: ``run_grid(cfg)``, the task every sweep job runs; and
``grid_report(cfg)``, the task that rebuilds a sweep's report from its MLflow runs.

A combination is (instance features, selector, classifier grid, reference size) on one
split. The job selects the reference set (memoised on disk across the sweep), fits the
generic assessor, and records validation AUC per validation LLM (what the winner is chosen
by) and test AUC per test LLM (what is reported), in one MLflow run tagged with the
combination's config hash so that a restarted sweep skips it.
"""
from __future__ import annotations

import logging
import time

import numpy as np
import pandas as pd
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from assessors.errors import ConfigError, DataError, InfeasibleError
from assessors.grid.resume import RESULT_KEYS, TAG_INFEASIBLE, config_hash, finished_run, job_tags
from assessors.selection.cache import array_digest, memo
from assessors.tasks.config import plain_part, tracker_from_cfg
from assessors.tasks.prepare import fit_assessor, prepare
from assessors.tasks.wrapper import task_wrapper
from assessors.threads import fit_threads, thread_limits

log = logging.getLogger(__name__)


def _choice(group: str) -> str | None:
    """The option name chosen for a config group in this Hydra job (None outside Hydra)."""
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return None
    return HydraConfig.get().runtime.choices.get(group)


def combination(cfg: DictConfig) -> dict[str, str]:
    """The grid coordinates of a job (also MLflow tags ``grid.<key>``)."""
    grid = cfg.get("grid") or {}
    if "classifier" in cfg.assessor:
        classifier = _choice("classifier") or cfg.classifier.estimator._target_.rsplit(".", 1)[-1]
    else:  # an assessor without a classifier slot (assessor=latent) is its own coordinate
        classifier = _choice("assessor") or cfg.assessor._target_.rsplit(".", 1)[-1]
    return {
        "split": str(grid.get("split_name") or _choice("split") or cfg.split._target_.rsplit(".", 1)[-1]),
        "features": str(cfg.assessor.get("instance_features", "embedding")),
        "selector": str(_choice("selector") or cfg.selector._target_.rsplit(".", 1)[-1]),
        "classifier": str(classifier),
        "size": str(cfg.selector.size),
    }


def select_reference(cfg: DictConfig, S_tr: np.ndarray, ids: list[str], X_tr: np.ndarray, validation=None):
    """Fit the configured selector, memoised on disk by (selector params, inputs' content).

    Returns
    -------
    ndarray of shape (size,): positions of the reference instances in ``ids``.
    """
    params = OmegaConf.to_container(cfg.selector, resolve=True)
    params.pop("cache_dir", None)
    if isinstance(params.get("space"), dict):
        params["space"].pop("cache_dir", None)
    val_digest = None if validation is None else array_digest(*validation)
    key = array_digest(params, list(ids), S_tr, X_tr, val_digest)

    def fit():
        selector = instantiate(cfg.selector).fit(S_tr, ids, X_tr, validation=validation)
        return {"index": np.asarray(selector.reference_index_, dtype=np.int64)}

    return memo(cfg.paths.cache_dir + "/selection", "reference_ids", key, fit)["index"]


def per_llm_auc(S: np.ndarray, P: np.ndarray, llms: list[str]) -> pd.Series:
    """AUC of each LLM's predictions; S and P of shape (n_llms, n_instances)."""
    from assessors.metrics import per_llm_auc as aucs

    return pd.Series(aucs(S, P), index=list(llms), dtype=float)


def run_grid(cfg: DictConfig) -> dict[str, float]:
    """Run one grid combination (skipped if an identical one already FINISHED).

    Returns
    -------
    dict with ``val_auc_mean`` (mean validation AUC over validation LLMs, what sweeps optimise),
    ``test_auc_mean``, ``skipped`` (1.0 when the result came from an earlier run) and ``infeasible``.
    """
    done = finished_run(tracker_from_cfg(cfg), config_hash(plain_part(cfg, RESULT_KEYS)))
    if done is not None:
        log.info("grid combination %s already finished in run %s: skipping", combination(cfg), done.info.run_id)
        m = done.data.metrics
        return {"val_auc_mean": m.get("val_auc_mean", float("nan")),
                "test_auc_mean": m.get("test_auc_mean", float("nan")), "skipped": 1.0,
                "infeasible": float(TAG_INFEASIBLE in done.data.tags)}
    return _run_combination(cfg)


def _tags(cfg: DictConfig) -> dict[str, str]:
    return {**job_tags(config_hash(plain_part(cfg, RESULT_KEYS))),
            **{f"grid.{k}": v for k, v in combination(cfg).items()}}


@task_wrapper("grid", tags=_tags)
def _run_combination(cfg: DictConfig, run) -> dict[str, float]:
    combo = combination(cfg)
    with thread_limits(fit_threads(threads=cfg.get("threads"))):
        t0 = time.perf_counter()
        prep = prepare(cfg)
        if not prep.llms["val"] or not prep.inst["val"]:
            raise ConfigError("the grid chooses its winner on validation LLMs x validation instances; the split has none")
        t1 = time.perf_counter()
        try:
            ref_idx = select_reference(cfg, prep.S("train", "train"), prep.inst["train"], prep.X["train"],
                                       prep.validation(prep.inst["train"]))
        except (InfeasibleError, DataError) as err:
            # the data cannot support this combination (a size above the candidate pool, more k-means
            # clusters than distinct success patterns): record why and let the rest of the sweep run;
            # the report lists it. Any other ConfigError is a mistake in the options and fails the job.
            log.warning("grid %s is infeasible on this data: %s", combo, err)
            run.set_tags({TAG_INFEASIBLE: str(err)[:1000]})
            nan = float("nan")
            return {"val_auc_mean": nan, "test_auc_mean": nan, "skipped": 0.0, "infeasible": 1.0}
        ref_ids = [prep.inst["train"][i] for i in ref_idx]
        t2 = time.perf_counter()
        assessor = fit_assessor(cfg, prep, ref_idx, ref_ids)
        t3 = time.perf_counter()
        R_val = prep.results.matrix(prep.llms["val"], ref_ids)
        val = per_llm_auc(prep.S("val", "val"), assessor.predict_proba(prep.X["val"], R_val), prep.llms["val"])
        R_te = prep.results.matrix(prep.llms["test"], ref_ids)
        test = per_llm_auc(prep.S("test", "test"), assessor.predict_proba(prep.X["test"], R_te), prep.llms["test"])
        metrics = {"val_auc_mean": float(val.mean()), "test_auc_mean": float(test.mean()),
                   "time/prepare_s": t1 - t0, "time/select_s": t2 - t1, "time/fit_s": t3 - t2,
                   "time/total_s": time.perf_counter() - t0}
        run.log_metrics(metrics)
        # per-LLM AUCs as metrics: the report reads them for all runs in one search_runs call
        run.log_metrics({f"val_auc/{k}": v for k, v in val.items()} | {f"test_auc/{k}": v for k, v in test.items()})
        run.log_table(pd.concat([pd.DataFrame({"llm": val.index, "auc": val.values, "part": "val"}),
                                 pd.DataFrame({"llm": test.index, "auc": test.values, "part": "test"})],
                                ignore_index=True), "grid/auc_per_llm.csv")
        run.log_dict({"reference_ids": ref_ids}, "reference_ids.json")
        from assessors.secrets import redact

        run.log_text(OmegaConf.to_yaml(redact(OmegaConf.to_container(cfg, resolve=False))), "grid/job_config.yaml")
        run.log_params({"generic.selected_classifier": assessor.classifier_name_})
    log.info("grid %s: mean val AUC %.3f, mean test AUC %.3f", combo, metrics["val_auc_mean"], metrics["test_auc_mean"])
    return {**metrics, "skipped": 0.0, "infeasible": 0.0}


def winner_vs_baselines(run_row: pd.Series) -> pd.DataFrame:
    """Refit the winner's config with the specific assessor and baselines; AUC per test LLM x method."""
    import mlflow

    from assessors.reporting.tables import per_llm_table
    from assessors.tasks.train import predict_methods, score_methods

    text = mlflow.artifacts.load_text(f"runs:/{run_row['run_id']}/grid/job_config.yaml")
    cfg = OmegaConf.create(text)
    prep = prepare(cfg)
    preds, _ = predict_methods(cfg, prep)
    table = per_llm_table(score_methods(prep, preds), metric="auc", mean_row=False)
    # the reported generic numbers are the grid run's own (identical config and seed)
    recorded = {c.split("/", 1)[1]: run_row[c] for c in run_row.index if c.startswith("metrics.test_auc/")}
    table["generic"] = [recorded.get(llm, table.loc[llm, "generic"]) for llm in table.index]
    return table


def grid_report(cfg: DictConfig) -> dict[str, float]:
    """Rebuild the report of the grid sweep logged to MLflow experiment ``cfg.tracking.experiment``
    (``python train.py experiment=grid_report tracking.experiment=<name>``)."""
    from assessors.grid.report import build_report
    gr = cfg.grid_report
    path = build_report(tracker_from_cfg(cfg), gr.out, baselines=winner_vs_baselines if gr.baselines else None,
                        splits=list(gr.splits) if gr.get("splits") else None)
    print(path)
    return {}
