"""``train_assessors(cfg)``: the default task of ``train.py``.

loader -> validate -> split -> features (cached) -> selector -> generic assessor (+ specific
and baselines) -> per-test-LLM metrics, plots and MLflow run -> pyfunc model.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from tqdm.auto import tqdm

from assessors.data.results import Results
from assessors.errors import ConfigError
from assessors.metrics import evaluate
from assessors.tags import capability
from assessors.threads import budgeted, fit_threads, thread_limits

log = logging.getLogger(__name__)


@dataclass
class Prepared:
    """Everything the assessors are fitted on, computed once per run."""

    results: Results
    inst: dict[str, list[str]]  # train/val/test instance ids
    llms: dict[str, list[str]]  # train/val/test LLM names
    X: dict[str, np.ndarray]  # train/val/test features, (n_ids, d)
    featurizer: object
    timings: dict[str, float] = field(default_factory=dict)

    def S(self, llm_part: str, inst_part: str) -> np.ndarray:
        """Success sub-matrix (n_llms, n_instances)."""
        return self.results.matrix(self.llms[llm_part], self.inst[inst_part])


def prepare(cfg: DictConfig) -> Prepared:
    """Load, validate, split and featurize (steps 1-4 of the pipeline)."""
    t = {}
    t0 = time.perf_counter()
    results: Results = instantiate(cfg.data)
    t["load_s"] = time.perf_counter() - t0
    log.info("loaded %r", results)
    if cfg.get("validate") is not None:
        from assessors.data.exclusion import exclude_flagged
        from assessors.data.validate import run_validation

        # before splitting: degenerate data fails here, not after minutes of fitting; flagged
        # blocks (grading failures, too few cells, no prompt text) are left out unless configured
        needs_text = not capability(instantiate(cfg.features), "uses_results")  # __init__ only stores params
        report = run_validation(results, cfg.validate, needs_text=needs_text)
        results = exclude_flagged(results, report, cfg.validate)
    inst = instantiate(cfg.split).split(results)
    llms = instantiate(cfg.llm_split).split(results)
    log.info("instances %s; LLMs %s", {k: len(v) for k, v in inst.items()}, {k: len(v) for k, v in llms.items()})
    t0 = time.perf_counter()
    featurizer, X = featurize(cfg, results, inst, llms["train"])
    t["features_s"] = time.perf_counter() - t0
    return Prepared(results, inst, llms, X, featurizer, t)


def featurize(cfg, results: Results, inst: dict, train_llms: list[str]):
    """Fit the configured featurizer on training data and transform every split."""
    featurizer = instantiate(budgeted(cfg.features, fit_threads(cfg=cfg)))
    if capability(featurizer, "uses_results"):
        S_train = results.matrix(train_llms, None)
        featurizer.fit(S_train[:, results.instance_index(inst["train"])])
        full = featurizer.transform(S_train)
        return featurizer, {k: full[results.instance_index(ids)] for k, ids in inst.items()}
    results.require_prompts()
    featurizer.fit(results.prompts(inst["train"]))
    # one call over all prompts: the embedding cache and length-sorted batching see everything at once
    all_ids = [i for ids in inst.values() for i in ids]
    full = featurizer.transform(results.prompts(all_ids))
    out, start = {}, 0
    for k, ids in inst.items():
        out[k] = full[start:start + len(ids)]
        start += len(ids)
    return featurizer, out


def fit_generic(cfg, prep: Prepared, selector_cfg=None, assessor_cfg=None):
    """Select the reference set and fit the generic assessor; returns (assessor, ref ids)."""
    S_tr = prep.S("train", "train")
    selector = instantiate(selector_cfg if selector_cfg is not None else cfg.selector)
    if capability(selector, "uses_validation") and prep.llms["val"]:
        # random_best_of_n judges its draws on the validation LLMs (their results on the candidates)
        val = (prep.X["val"], prep.S("val", "val"), prep.results.matrix(prep.llms["val"], prep.inst["train"]))
        selector.fit(S_tr, prep.inst["train"], prep.X["train"], validation=val)
    else:
        selector.fit(S_tr, prep.inst["train"], prep.X["train"])
    ref_ids = selector.reference_ids_
    ref_idx = np.asarray(selector.reference_index_)
    R_val = prep.results.matrix(prep.llms["val"], ref_ids)
    validation = (prep.X["val"], prep.S("val", "val"), R_val) if prep.llms["val"] else None
    assessor = instantiate(budgeted(assessor_cfg if assessor_cfg is not None else cfg.assessor, fit_threads(cfg=cfg)))
    assessor.fit(prep.X["train"], S_tr, ref_idx, validation=validation)
    return assessor, ref_ids


def predict_methods(cfg, prep: Prepared) -> tuple[dict[str, np.ndarray], dict]:
    """Test-set P(success) of shape (n_test_llms, n_test) for every method."""
    test_llms, X_te = prep.llms["test"], prep.X["test"]
    preds, fitted = {}, {}
    t0 = time.perf_counter()
    generic, ref_ids = fit_generic(cfg, prep)
    prep.timings["generic_fit_s"] = time.perf_counter() - t0
    R_test = prep.results.matrix(test_llms, ref_ids)
    preds["generic"] = generic.predict_proba(X_te, R_test)
    fitted.update(generic=generic, reference_ids=ref_ids)
    cmp = cfg.get("compare", {})
    if cmp.get("all_train_data", True):
        t0 = time.perf_counter()
        base = instantiate(budgeted(_all_train_data_node(cfg), fit_threads(cfg=cfg)), use_reference=False,
                           instance_features="embedding")
        val = None
        if prep.llms["val"]:
            val = (prep.X["val"], prep.S("val", "val"), np.zeros((len(prep.llms["val"]), 0), np.float32))
        base.fit(prep.X["train"], prep.S("train", "train"), np.array([], dtype=int), validation=val)
        preds["all_train_data"] = base.predict_proba(X_te, np.zeros((len(test_llms), 0), np.float32))
        prep.timings["all_train_data_fit_s"] = time.perf_counter() - t0
    if cmp.get("random_selector", True):
        if OmegaConf.select(cfg, "selector._target_", default="").endswith("RandomSelector"):
            # the configured selector is already random: the baseline is the generic assessor itself
            preds["random_selector"] = preds["generic"]
        else:
            rand = {"_target_": "assessors.selection.base.RandomSelector", "size": cfg.selector.size, "seed": cfg.seed}
            g2, ref2 = fit_generic(cfg, prep, selector_cfg=rand)
            preds["random_selector"] = g2.predict_proba(X_te, prep.results.matrix(test_llms, ref2))
    ref_pos = prep.results.instance_index(ref_ids)
    X_ref = prep.X["train"][pd.Index(prep.inst["train"]).get_indexer(ref_ids)]
    per_llm = {"reference_only": cmp.get("reference_only", True), "specific": cmp.get("specific", True)}
    for method, on in per_llm.items():
        if on:
            t0 = time.perf_counter()
            preds[method] = fit_per_llm(cfg, prep, method, X_ref, ref_pos)
            prep.timings[f"{method}_fit_s"] = time.perf_counter() - t0
    return preds, fitted


def _all_train_data_node(cfg):
    """The "all train data" baseline: the generic assessor without reference vector, whichever
    assessor is configured (an assessor without that switch gets the generic one on ``cfg.classifier``,
    so the baseline is the same in every run)."""
    if "use_reference" in cfg.assessor:
        return cfg.assessor
    return {"_target_": "assessors.core.generic.GenericAssessor",
            "classifier": OmegaConf.to_container(cfg.classifier, resolve=True)}


def fit_per_llm(cfg, prep: Prepared, method: str, X_ref: np.ndarray, ref_pos: np.ndarray) -> np.ndarray:
    """Test-set P(success) (n_test_llms, n_test) of one per-LLM assessor per test LLM.

    ``method="specific"`` trains on the LLM's training instances (validation instances choose the
    classifier); ``"reference_only"`` on its reference results alone. ``cfg.llm_jobs`` LLMs are
    fitted at once in threads (XGBoost and BLAS release the GIL); each classifier then gets
    ``fit_threads(llm_jobs)`` threads so the machine is not oversubscribed.
    """
    from joblib import Parallel, delayed

    jobs = max(1, int(cfg.get("llm_jobs", 1)))
    threads = fit_threads(jobs, cfg)
    inst = {part: prep.results.instance_index(prep.inst[part]) for part in ("train", "val")}
    spec_cfg = budgeted(cfg.specific, threads)

    def one(llm: str) -> np.ndarray:
        spec = instantiate(spec_cfg, n_jobs=threads)
        row = prep.results.success[prep.results.llm_index([llm])[0]]
        if method == "specific":
            spec.fit(prep.X["train"], row[inst["train"]], prep.X["val"], row[inst["val"]])
        else:
            spec.fit(X_ref, row[ref_pos])
        return spec.predict_proba(prep.X["test"])

    llms = prep.llms["test"]
    out = np.zeros((len(llms), len(prep.X["test"])), dtype=np.float32)
    # BLAS pools (logistic regression) would otherwise start cpu_count threads inside every worker
    # thread: oversubscribed cores made the specific assessors slower, not faster
    with thread_limits(threads):
        rows = Parallel(n_jobs=jobs, backend="threading", return_as="generator")(delayed(one)(llm) for llm in llms)
        for k, p in enumerate(tqdm(rows, total=len(llms), desc=f"{method} assessors", leave=False)):
            out[k] = p
    return out


def score_methods(prep: Prepared, preds: dict[str, np.ndarray]) -> pd.DataFrame:
    """Long table ``llm, method, metric, value`` on test LLMs x test instances."""
    S_te = prep.S("test", "test")
    rows = []
    for method, P in preds.items():
        for k, llm in enumerate(prep.llms["test"]):
            keep = ~np.isnan(S_te[k])
            for metric, value in evaluate(S_te[k][keep], P[k][keep]).items():
                rows.append((llm, method, metric, value))
    return pd.DataFrame(rows, columns=["llm", "method", "metric", "value"])


def train_assessors(cfg: DictConfig) -> dict[str, float]:
    """Train and evaluate the generic assessor, the specific assessor and the baselines.

    Returns
    -------
    dict of summary metrics (mean test AUC etc. per method); ``objective`` is the generic
    assessor's mean test AUC (what sweeps optimise).
    """
    from assessors.reporting import report_run
    from assessors.tracking import tracker_from_cfg

    tracker = tracker_from_cfg(cfg)
    with tracker.start_run(cfg.get("run_name") or "train", cfg) as run, thread_limits(fit_threads(cfg=cfg)):
        run.log_params({"threads.per_fit": fit_threads(cfg=cfg), "threads.per_llm_fit": fit_threads(cfg.get("llm_jobs", 1), cfg)})
        t_all = time.perf_counter()
        prep = prepare(cfg)
        from assessors.data.exclusion import excluded_summary

        run.set_tags({"data_fingerprint": prep.results.fingerprint(), "data": prep.results.name,
                      **excluded_summary(prep.results)})
        if not prep.llms["test"] or not prep.inst["test"]:
            raise ConfigError("the split leaves no test LLMs or no test instances")
        if cfg.get("validate") is not None:
            from assessors.data.validate import validate_prepared

            # adds the split-size and train/test leakage checks, logs the report
            validate_prepared(prep, cfg.validate, run, reference_size=cfg.selector.get("size"))
        preds, fitted = predict_methods(cfg, prep)
        from assessors.trust.fit import fit_trust

        fitted["trust_model"] = fit_trust(cfg, prep, fitted["generic"], fitted["reference_ids"], run)
        long = score_methods(prep, preds)
        prep.timings["total_s"] = time.perf_counter() - t_all
        summary = report_run(cfg, run, prep, preds, fitted, long)
    return summary
