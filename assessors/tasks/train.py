"""``train_assessors(cfg)``: the default task of ``train.py``.

loader -> validate -> split -> features (cached) -> selector -> the configured assessor -> each test
LLM as served (its trust verdict, the fallback if any), beside it in a thread the specific assessor and
the baselines (:func:`fit_and_serve`) -> per-test-LLM metrics, plots and MLflow run -> pyfunc model. In the results the configured assessor is named after
its method (:func:`~assessors.tasks.wrapper.method_name`), as served (the headline) and raw.
"""
from __future__ import annotations

import logging
import time
from typing import Callable, Iterator

import numpy as np
import pandas as pd
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from tqdm.auto import tqdm

from assessors.core.evidence import Evidence
from assessors.core.generic import GenericAssessor
from assessors.errors import ConfigError
from assessors.metrics import evaluate
from assessors.selection.base import RandomSelector
from assessors.tasks.config import plain
from assessors.tasks.lanes import run_lanes
from assessors.tasks.prepare import Prepared, fit_assessor, fit_generic, fit_selector, prepare
from assessors.tasks.train_trust import fit_trust_parts
from assessors.tasks.timing import stage
from assessors.tasks.served import Served, serve_llms, served_table, serving_model
from assessors.tasks.wrapper import PAPER, method_name, task_wrapper
from assessors.threads import budgeted, fit_threads, lane_limits, thread_limits

log = logging.getLogger(__name__)


#: The order of the methods' columns in the results (the configured assessor's first).
COLUMNS = ("generic", PAPER, "all_train_data", "random_selector", "reference_only", "specific")


def predict_methods(cfg, prep: Prepared) -> tuple[dict[str, np.ndarray], dict]:
    """Test-set P(success) of shape (n_test_llms, n_test) for every method, one after another."""
    selector = select_reference(cfg, prep)
    preds, fitted = predict_generic(cfg, prep, selector)
    columns = dict(task() for task in baseline_columns(cfg, prep, selector.reference_ids_))
    return in_column_order({**preds, **columns}), fitted


def in_column_order(preds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``preds`` with its methods in :data:`COLUMNS` order, however the lanes produced them."""
    return {m: preds[m] for m in COLUMNS if m in preds}


def select_reference(cfg, prep: Prepared):
    """The configured selector, fitted (timed with the generic assessor's fit, as it always was)."""
    with stage(prep.timings, "generic_fit_s"):
        return fit_selector(instantiate(cfg.selector), prep)


def predict_generic(cfg, prep: Prepared, selector) -> tuple[dict[str, np.ndarray], dict]:
    """The configured assessor on ``selector``'s reference set (and on a random one, the
    ``random_selector`` column): test-set P(success) (n_test_llms, n_test) and ``{generic, reference_ids}``."""
    test_llms, X_te = prep.llms["test"], prep.X["test"]
    ref_ids = selector.reference_ids_
    with stage(prep.timings, "generic_fit_s"):
        generic = fit_assessor(cfg, prep, np.asarray(selector.reference_index_), ref_ids)
    preds = {"generic": generic.predict_proba(X_te, prep.results.matrix(test_llms, ref_ids))}
    if cfg.get("compare", {}).get("random_selector", True):
        # with the configured selector already random the baseline is the headline itself: not a column.
        # In this lane, not the baselines': a second latent fit beside the first would share torch's RNG
        if type(instantiate(cfg.selector)) is not RandomSelector:  # __init__ only stores params
            g2, ref2 = fit_generic(cfg, prep, selector=RandomSelector(size=cfg.selector.size, seed=cfg.seed))
            preds["random_selector"] = g2.predict_proba(X_te, prep.results.matrix(test_llms, ref2))
    return preds, {"generic": generic, "reference_ids": ref_ids}


def baseline_columns(cfg, prep: Prepared, ref_ids: list[str]) -> Iterator[Callable[[], tuple[str, np.ndarray]]]:
    """The baseline columns as tasks, the longest first: each returns ``(method, P)``, P the test-set
    P(success) (n_test_llms, n_test). The paper's generic assessor, specific, reference only and all
    train data (those ``cfg.compare`` turns on).

    They read the prepared data and the reference set only, never the configured assessor, so
    ``train.py`` runs them beside it and each other (:func:`~assessors.tasks.lanes.run_lanes`).
    """
    cmp = cfg.get("compare", {})
    if cmp.get("paper_generic", False) and method_name(cfg) != PAPER and cfg.get(PAPER) is not None:
        yield lambda: (PAPER, timed_column(prep, PAPER, paper_generic_column, cfg, prep, ref_ids))
    ref_pos = prep.results.instance_index(ref_ids)
    X_ref = prep.X["train"][pd.Index(prep.inst["train"]).get_indexer(ref_ids)]
    for method in ("specific", "reference_only"):
        if cmp.get(method, True):
            yield lambda method=method: (method, timed_column(prep, method, fit_per_llm, cfg, prep, method, X_ref,
                                                              ref_pos))
    if cmp.get("all_train_data", True):
        yield lambda: ("all_train_data", timed_column(prep, "all_train_data", all_train_data_column, cfg, prep))


def timed_column(prep: Prepared, method: str, fit: Callable[..., np.ndarray], *args) -> np.ndarray:
    """``fit(*args)``, timed as the stage ``<method>_fit_s``."""
    with stage(prep.timings, f"{method}_fit_s"):
        return fit(*args)


def paper_generic_column(cfg, prep: Prepared, ref_ids: list[str]) -> np.ndarray:
    """The paper's generic assessor (XGBoost on [features, reference vector]) on the same reference set:
    test-set P(success) (n_test_llms, n_test)."""
    ref_idx = pd.Index(prep.inst["train"]).get_indexer(ref_ids)
    paper = fit_assessor(cfg, prep, ref_idx, ref_ids, assessor_cfg=cfg[PAPER])
    return paper.predict_proba(prep.X["test"], prep.results.matrix(prep.llms["test"], ref_ids))


def all_train_data_column(cfg, prep: Prepared) -> np.ndarray:
    """The "all train data" baseline (:func:`all_train_data_assessor`) fitted on the training LLMs:
    test-set P(success) (n_test_llms, n_test)."""
    base = all_train_data_assessor(cfg, fit_threads(threads=cfg.get("threads")))
    val = None
    if prep.llms["val"]:
        val = (prep.X["val"], prep.S("val", "val"), np.zeros((len(prep.llms["val"]), 0), np.float32))
    base.fit(prep.X["train"], prep.S("train", "train"), np.array([], dtype=int), validation=val)
    return base.predict_proba(prep.X["test"], np.zeros((len(prep.llms["test"]), 0), np.float32))


def all_train_data_assessor(cfg, threads: int):
    """The "all train data" baseline, built with ``threads`` threads: the generic assessor without
    reference vector, whichever assessor is configured (an assessor without that switch gets the
    generic one on ``cfg.classifier``, so the baseline is the same in every run)."""
    if "use_reference" in cfg.assessor:
        return instantiate(budgeted(cfg.assessor, threads), use_reference=False, instance_features="embedding")
    return GenericAssessor(classifier=instantiate(budgeted(cfg.classifier, threads)), use_reference=False,
                           instance_features="embedding")


def fit_per_llm(cfg, prep: Prepared, method: str, X_ref: np.ndarray, ref_pos: np.ndarray) -> np.ndarray:
    """Test-set P(success) (n_test_llms, n_test) of one per-LLM assessor per test LLM.

    ``method="specific"`` trains on the LLM's training instances (validation instances choose the
    classifier); ``"reference_only"`` on its reference results alone. ``cfg.llm_jobs`` LLMs are
    fitted at once in threads (XGBoost and BLAS release the GIL); each classifier then gets
    ``fit_threads(llm_jobs)`` threads so the machine is not oversubscribed.
    """
    from joblib import Parallel, delayed

    jobs = max(1, int(cfg.get("llm_jobs", 1)))
    threads = fit_threads(jobs, cfg.get("threads"))
    inst = {part: prep.results.instance_index(prep.inst[part]) for part in ("train", "val")}
    # built once: each describe() fits a classifier of its own (instantiating took ~60 ms of CPU per LLM)
    spec = instantiate(budgeted(cfg.specific, threads), n_jobs=threads)

    def one(llm: str) -> np.ndarray:
        row = prep.results.success[prep.results.llm_index([llm])[0]]
        if method == "specific":
            state = spec.describe(Evidence(prep.X["train"], row[inst["train"]]),
                                  Evidence(prep.X["val"], row[inst["val"]]))
        else:
            state = spec.describe(Evidence(X_ref, row[ref_pos]))
        return spec.predict_state(prep.X["test"], state)[0]

    llms = prep.llms["test"]
    out = np.zeros((len(llms), len(prep.X["test"])), dtype=np.float32)
    # BLAS pools (logistic regression) would otherwise start cpu_count threads inside every worker
    # thread: 2 LLMs x 2 BLAS threads on 2 cores made the specific assessors 1.4x slower
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


@task_wrapper("train", describe=True)
def train_assessors(cfg: DictConfig, run) -> dict[str, float]:
    """Train and evaluate the configured assessor, the specific assessor and the baselines.

    Returns
    -------
    dict of summary metrics: mean test AUC etc. per method, named after it (``auc/latent_served``,
    ``auc/latent_raw``, ``auc/paper_generic``, ``auc/specific``, ...), and the configured assessor's as
    served also as ``<metric>/headline`` (``auc/headline``: what sweeps optimise by default).
    """
    from assessors.data.exclusion import excluded_summary
    from assessors.reporting.run_report import print_report, report_run

    with thread_limits(fit_threads(threads=cfg.get("threads"))):
        run.log_params({"threads.per_fit": fit_threads(threads=cfg.get("threads")),
                        "threads.per_llm_fit": fit_threads(cfg.get("llm_jobs", 1), cfg.get("threads"))})
        t_all = time.perf_counter()
        prep = prepare(cfg)
        run.set_tags({"data_fingerprint": prep.results.fingerprint(), "data": prep.results.name,
                      **excluded_summary(prep.results)})
        if not prep.llms["test"] or not prep.inst["test"]:
            raise ConfigError("the split leaves no test LLMs or no test instances")
        if cfg.get("validate") is not None:
            from assessors.data.validate import validate_split

            # adds the split-size and train/test leakage checks, logs the report
            validate_split(prep.results, prep.inst, prep.llms, prep.X, plain(cfg.validate), run,
                           reference_size=cfg.selector.get("size"),
                           text_features=prep.featurizer.reads == "prompts")
        print(data_line(prep, cfg))
        preds, fitted, served = fit_and_serve(cfg, prep, run)
        method = method_name(cfg) or "generic"
        headline, raw = served_name(method), raw_name(method)
        # served first: the headline is what predict.py and the server give each test LLM
        preds = {headline: served.P, raw: preds.pop("generic"), **preds}
        long = score_methods(prep, preds)
        prep.timings["total_s"] = time.perf_counter() - t_all
        with stage(prep.timings, "report_s"):  # tables, figures, metrics
            served_rows = served_table(served, preds[raw], prep.S("test", "test"), prep.llms["test"])
            summary, auc, notes = report_run(run, long, preds, prep.S("test", "test"), fitted["generic"],
                                             fitted["reference_ids"], validation=prep.results.meta.get("validation"),
                                             plots=cfg.get("plots", True), headline=headline, raw=raw,
                                             served=served_rows)
        timings = {f"time/{k}": float(v) for k, v in prep.timings.items()}
        run.log_metrics(timings)
        summary.update(timings)
        after = {}
        with stage(after, "log_model_s"):
            command = log_model(cfg, run, prep, fitted)
        run.log_metrics({f"time/{k}": v for k, v in after.items()})
        print_report(auc, notes, summary, fitted["generic"].classifier_name_, run.location, headline=headline,
                     raw=raw, served=served_rows)
        if run.tags.get("model_uri"):
            print(f"Model: {run.tags['model_uri']}")
        if command:
            print(f"Next: score held-out prompts with this model (P(success) of each training LLM):\n  {command}")
            run.log_text(command + "\n", "predict_command.txt")
    return summary


def fit_and_serve(cfg, prep: Prepared, run=None) -> tuple[dict[str, np.ndarray], dict, Served]:
    """Every method's test-set P(success) (n_test_llms, n_test) in :data:`COLUMNS` order, the configured
    assessor with its trust parts, and each test LLM as served.

    Two lanes: the configured assessor (fit, trust parts, serving; mostly one thread) and the
    baseline columns. ``cfg.overlap`` (default true) runs them at once in threads of this process
    (:func:`~assessors.tasks.lanes.run_lanes`; once the assessor's lane is done, its thread takes the
    columns left), every thread with ``fit_threads(2)`` threads (1 on 2 cores): the BLAS/torch limit is
    process-wide, so it is set once for all (:func:`~assessors.threads.lane_limits`), and the baselines'
    XGBoost fits get that many too (the paper column's predictions were identical at 1 and 2 threads; at 2
    beside the assessor's lane its one-thread steps waited for a core); a per-LLM column fits one LLM at a
    time. False: one after the other, the baselines last.
    """
    selector = select_reference(cfg, prep)
    ref_ids = selector.reference_ids_

    def assessor_lane():
        preds, fitted = predict_generic(cfg, prep, selector)
        fitted.update(fit_trust_parts(cfg, prep, fitted["generic"], ref_ids, run))
        with stage(prep.timings, "serve_test_llms_s"):
            served = serve_test_llms(cfg, prep, fitted)
        return preds, fitted, served

    overlap = bool(cfg.get("overlap", True))
    lane = fit_threads(2, cfg.get("threads")) if overlap else None
    # one LLM at a time in a per-LLM column: each thread within the lanes' budget (two per-LLM columns at
    # once, two LLMs each, cost 16% more CPU than one after the other on 2 cores; the fits are the same)
    base_cfg = OmegaConf.merge(cfg, {"threads": lane, "llm_jobs": 1}) if overlap else cfg
    with lane_limits(lane):
        (preds, fitted, served), columns = run_lanes(assessor_lane, lambda: baseline_columns(base_cfg, prep, ref_ids),
                                                     overlap=overlap)
    return in_column_order({**preds, **dict(columns)}), fitted, served


def served_name(method: str) -> str:
    """The column of what is served for ``method`` (after each test LLM's trust verdict): the headline."""
    return f"{method} (served)"


def raw_name(method: str) -> str:
    """The column of ``method``'s own predictions, before any trust verdict."""
    return f"{method} (raw)"


def serve_test_llms(cfg, prep: Prepared, fitted: dict, X: np.ndarray | None = None) -> Served:
    """What ``predict.py mode=score`` would serve each test LLM from its reference results, on the test
    prompts (or on ``X`` (n, d)): the trained model on the serving engine with ``cfg.serve.trust``
    (``predict.py``'s ``trust`` defaults), see :func:`~assessors.tasks.served.serve_llms`."""
    ref_ids = fitted["reference_ids"]
    model = serving_model(fitted["generic"], prep.featurizer, ref_ids, prep.results.matrix(prep.llms["train"], ref_ids),
                          prep.llms["train"], fitted)
    node = cfg.get("serve") or {}
    trust = plain(node.get("trust")) if node.get("trust") is not None else None
    X = prep.X["test"] if X is None else X
    return serve_llms(model, X, prep.results.matrix(prep.llms["test"], ref_ids), prep.llms["test"],
                      trust, max_target=node.get("trust_target_max"))


def data_line(prep: Prepared, cfg) -> str:
    """One line: the data, its size and the split (prompts and LLMs per part), and the seed."""
    n_llms, n_inst = prep.results.success.shape
    parts = ("train", "val", "test")
    return (f"Data: {prep.results.name}, {n_llms} LLMs x {n_inst:,} prompts; split (train/val/test): prompts "
            + "/".join(str(len(prep.inst[p])) for p in parts) + ", LLMs "
            + "/".join(str(len(prep.llms[p])) for p in parts) + f"; seed {cfg.get('seed', 0)}")


def log_model(cfg, run, prep: Prepared, fitted: dict) -> str | None:
    """Log the generic assessor as an MLflow pyfunc model; returns the ``predict.py`` command that
    scores held-out prompts with it (None when no model is logged)."""
    if not getattr(getattr(cfg, "tracking", None), "log_model", False) or prep.featurizer.reads != "prompts":
        return None
    from assessors.core.pyfunc import log_assessor_model
    from assessors.tasks.commands import example_prompts, predict_command

    ref_ids = fitted["reference_ids"]
    assessor = fitted["generic"]
    # served, the model scores the LLMs it knows from all their training answers
    t0 = time.perf_counter()
    known = assessor.describe_known(prep.X["train"], prep.S("train", "train"),
                                    [prep.inst["train"].index(i) for i in ref_ids])
    run.log_metrics({"time/known_posterior_s": time.perf_counter() - t0})
    uri = log_assessor_model(run, assessor, prep.featurizer, ref_ids,
                             prep.results.matrix(prep.llms["train"], ref_ids), prep.llms["train"],
                             example_prompts=prep.results.prompts(prep.inst["test"][:2]),
                             trust_model=fitted.get("trust_model"), trust_policy=fitted.get("trust_policy"),
                             training_prompts=training_prompts(prep, run), prompt_ood=fitted.get("prompt_ood"),
                             known_states=known)
    if not uri:
        return None
    run.set_tags({"model_uri": uri})
    log.info("model logged: %s", uri)
    ids = list(prep.inst["test"][:20])
    prompts = example_prompts(ids, prep.results.prompts(ids), cfg.paths.outputs, run.run_id)
    return predict_command(cfg.tracking, cfg.paths.outputs, uri, prompts)


def training_prompts(prep: Prepared, run=None) -> dict | None:
    """The provenance of the training prompts stored with the model (prompt files relative to the data
    dir and the training ids; :func:`~assessors.data.training_prompts.training_prompts_record`): the
    default candidate pool of adaptive onboarding. Logged to ``run`` as tags and ``data/training_prompts.json``."""
    from assessors.data.training_prompts import training_prompts_record

    record = training_prompts_record(prep.results, prep.inst["train"])
    if record is None:
        log.info("training prompts: %s lists no prompt files; onboarding will need prompt files named", prep.results.name)
        return None
    if not record["files"]:  # the data says why it has no pool; the record keeps the reason for onboarding's errors
        log.info("training prompts: no default onboarding pool (%s: %s); onboarding will need prompt files named",
                 record["data"], record["no_pool"])
    else:
        log.info("training prompts: %d ids in %d prompt file(s) recorded with the model (%d without a file)",
                 record["n_ids"], len(record["files"]), record["n_without_file"])
    if run is not None:
        run.set_tags({"training_prompts.n": str(record["n_ids"]),
                      "training_prompts.files": str(len(record["files"]))})
        run.log_dict(record, "data/training_prompts.json")
    return record
