"""Degenerate and suspicious data, caught at load time (``conf/validate/``).

Checks, each reported with counts and names (nothing is dropped; the caller decides):

* ``constant_llm``: an LLM whose success is constant on a dataset (subgroup);
* ``constant_dataset``: a dataset on which every LLM has the same success (e.g. a grading
  failure that scored everything 0);
* ``mostly_constant_dataset``: a dataset on which at least ``constant_share`` of the LLMs are
  constant (a grading failure that is not perfectly constant: 13 of 14 LLMs at 0);
* ``few_cells_llm`` / ``few_cells_dataset``: an LLM or a dataset with fewer than
  ``min_llm_cells`` / ``min_dataset_cells`` answered cells;
* ``missing_prompt``: instances without prompt text (named by dataset), and ``blank_prompt``:
  prompts that are empty or only white space (named by id), when prompt features are requested;
* ``case_variants``: LLM names, subgroups or instance ids that differ only by case;
* ``conflicting_duplicates``: the same LLM listed with different results (loaders keep such rows
  as ``name#2``), and ``identical_llms``: different names with identical result rows;
* ``missing_llm`` / ``missing_instance``: too many missing cells;
* ``duplicate_prompts``: the same prompt text under several instance ids;
* ``leakage``: exact or near-duplicate prompts across train and test (:func:`check_leakage`,
  on features, after the split);
* ``reference_share``: a reference set that takes most of the training prompts (the generic
  assessor learns from the rest), and ``few_llms``: a split that leaves a single validation or
  test LLM (:func:`size_issues`, after the split).

Warnings go to the console (logging) and, through :func:`log_validation`, to MLflow.
``strict: true`` (or a check named in ``fail_on``) turns warnings into a :class:`DataError`.
The checks in :data:`BLOCK_CHECKS` also name *blocks* (datasets, LLMs, instances) that the
pipeline leaves out of the run by default (:mod:`assessors.data.exclusion`).
Standalone: ``python train.py experiment=validate data=...``.
"""
from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from assessors.data.block_checks import blank_prompt_check, block_checks, missing_prompt_check
from assessors.data.result_checks import (case_variant_check, constant_checks, duplicate_llm_checks,
                                          duplicate_prompt_check, missing_checks)
from assessors.data.results import Results
from assessors.errors import DataError
from assessors.linalg import unit_rows

log = logging.getLogger(__name__)

DEFAULTS = dict(strict=False, fail_on=[], min_cells=5, max_missing_llm=0.5, max_missing_instance=0.5,
                identical_min_cells=50, near_duplicate=0.98, max_names=10, leakage=True, constant_share=0.9,
                min_llm_cells=20, min_dataset_cells=20, exclude=True, max_reference_share=0.5, min_split_llms=2)
#: Checks whose offenders are blocks of the data (what ``exclude`` leaves out of the run).
BLOCK_CHECKS = ("constant_dataset", "mostly_constant_dataset", "few_cells_llm", "few_cells_dataset",
                "missing_prompt", "blank_prompt")


@dataclass
class Issue:
    """One failed check: ``count`` offenders, the first ``max_names`` of them named."""

    check: str
    count: int
    names: list
    message: str


@dataclass
class ValidationReport:
    """All issues found in one data set (empty ``issues`` = clean)."""

    data: str
    n_llms: int
    n_instances: int
    issues: list[Issue] = field(default_factory=list)
    #: Every flagged block, complete (names in ``issues`` stop at ``max_names``):
    #: ``{"datasets": [...], "llms": [...], "instances": [...]}``.
    flagged: dict = field(default_factory=dict)
    #: Whether the run left the flagged blocks out (None: not decided, e.g. standalone validation).
    excluded: bool | None = None

    def to_dict(self) -> dict:
        return asdict(self)

    def counts(self) -> dict[str, int]:
        return {i.check: i.count for i in self.issues}

    def __str__(self) -> str:
        head = f"validation of {self.data} ({self.n_llms} LLMs x {self.n_instances} instances): "
        if not self.issues:
            return head + "no issues"
        text = head + f"{len(self.issues)} issue(s)\n" + "\n".join(f"  [{i.check}] {i.message}" for i in self.issues)
        return text + ("\n" + self.flagged_text() if self.flagged else "")

    def flagged_text(self) -> str:
        """One line naming the flagged blocks and whether the run left them out."""
        parts = [f"datasets {self.flagged['datasets']}" if self.flagged.get("datasets") else "",
                 f"LLMs {self.flagged['llms']}" if self.flagged.get("llms") else "",
                 f"{len(self.flagged['instances'])} instances without prompt text (missing, empty or white space)"
                 if self.flagged.get("instances") else ""]
        what = "; ".join(p for p in parts if p)
        if self.excluded is None:
            return f"flagged blocks (a run leaves them out unless validate.exclude=false): {what}"
        return (f"EXCLUDED from training and headline metrics: {what}" if self.excluded else
                f"INCLUDED although flagged (validate.exclude=false; headline metrics contain them): {what}")


def _opts(options: Mapping | None) -> dict:
    """The validation options (a mapping of plain values, e.g. the ``validate`` settings) over :data:`DEFAULTS`."""
    if options is None:
        return dict(DEFAULTS)
    out = {k: options.get(k, v) for k, v in DEFAULTS.items()}
    out["fail_on"] = list(out["fail_on"] or [])
    return out


def _named(items: Sequence, n: int) -> list:
    return [list(x) if isinstance(x, tuple) else x for x in list(items)[:n]]


def _more(count: int, n: int) -> str:
    return f" (+{count - n} more)" if count > n else ""


def check_results(results: Results, cfg=None, needs_text: bool = True) -> ValidationReport:
    """All load-time checks (everything but leakage) on one :class:`Results`; never raises.

    ``needs_text``: whether prompt features will be computed (then instances without prompt text
    are an issue; success-pattern features need none).
    """
    o = _opts(cfg)
    rep = ValidationReport(results.name, *results.success.shape)
    found = _Collector(rep, o["max_names"])
    groups = results.instances["subgroup"].fillna("<none>").astype(str)
    constant_checks(results, groups, o, found.add)
    block_checks(results, groups, o, found.add)
    duplicate_llm_checks(results, o, found.add)
    missing_checks(results, o, found.add)
    duplicate_prompt_check(results, o, found.add)
    case_variant_check(results, o, found.add)
    has_text = needs_text and results.instances["prompt"].notna().any()
    no_text = (missing_prompt_check(results, groups, found.add) + blank_prompt_check(results, found.add)
               if has_text else [])
    rep.flagged = _flagged(found.full, no_text)
    return rep


class _Collector:
    """The ``add(check, items, message)`` callback of the checks: an :class:`Issue` in the report
    naming the first ``n`` offenders, and the complete offender list in ``full``."""

    def __init__(self, rep: ValidationReport, n: int):
        self.rep, self.n, self.full = rep, n, {}

    def add(self, check: str, items: list, msg: str) -> None:
        self.full[check] = items
        self.rep.issues.append(Issue(check, len(items), _named(items, self.n), msg + _more(len(items), self.n)))


def _flagged(full: dict[str, list], no_text: list) -> dict[str, list]:
    """The blocks a run leaves out: datasets, LLMs and instances flagged by the block checks."""
    datasets = [str(x[0]) for c in ("constant_dataset", "mostly_constant_dataset", "few_cells_dataset")
                for x in full.get(c, [])]
    return {k: v for k, v in {"datasets": sorted(set(datasets)),
                              "llms": [m for m, _ in full.get("few_cells_llm", [])],
                              "instances": [str(i) for i in no_text]}.items() if v}


def check_leakage(X_train, X_test, train_ids: Sequence[str], test_ids: Sequence[str],
                  threshold: float = 0.98, batch: int = 1024, train_texts: Sequence[str] | None = None,
                  test_texts: Sequence[str] | None = None) -> pd.DataFrame:
    """Near-duplicate prompts across train and test, by cosine similarity of their features.

    Parameters
    ----------
    X_train : ndarray of shape (n_train, d)
    X_test : ndarray of shape (n_test, d)
    train_ids, test_ids : sequence of str
        Instance ids, row for row.
    threshold : float
        Cosine similarity at or above which a pair is reported (exact duplicates give 1.0).
    train_texts, test_texts : sequence of str, optional
        Prompt texts; when given, ``exact_text`` tells identical texts from texts that only
        have (near-)identical features (e.g. a featurizer that truncates long shared prefixes).

    Returns
    -------
    DataFrame with columns ``test_id, train_id, cosine, exact_text`` (the nearest train prompt of
    each leaking test prompt), sorted by decreasing similarity; ``exact_text`` is NaN without texts.
    """
    A = np.asarray(X_train, dtype=np.float32)
    B = np.asarray(X_test, dtype=np.float32)
    if A.shape[0] != len(train_ids) or B.shape[0] != len(test_ids):
        raise DataError(f"check_leakage: {A.shape[0]} train rows for {len(train_ids)} ids, "
                        f"{B.shape[0]} test rows for {len(test_ids)} ids")
    A, B = unit_rows(A), unit_rows(B)
    rows = []
    for s in range(0, len(B), batch):  # chunks keep memory at batch x n_train
        sim = B[s:s + batch] @ A.T
        best = sim.argmax(1)
        top = sim[np.arange(len(best)), best]
        for j in np.flatnonzero(top >= threshold - 1e-6):
            same = (np.nan if train_texts is None or test_texts is None
                    else bool(test_texts[s + j] == train_texts[best[j]]))
            rows.append((str(test_ids[s + j]), str(train_ids[best[j]]), float(top[j]), same))
    out = pd.DataFrame(rows, columns=["test_id", "train_id", "cosine", "exact_text"])
    return out.sort_values("cosine", ascending=False, ignore_index=True)


def enforce(report: ValidationReport, cfg=None) -> ValidationReport:
    """Log every issue as a warning; raise :class:`DataError` if strictness says so."""
    o = _opts(cfg)
    for i in report.issues:
        log.warning("%s: [%s] %s", report.data, i.check, i.message)
    fatal = [i for i in report.issues if o["strict"] or i.check in o["fail_on"]]
    if fatal:
        raise DataError(f"{report.data}: data validation failed ({'strict' if o['strict'] else 'fail_on'}): "
                        + "; ".join(f"[{i.check}] {i.message}" for i in fatal))
    return report


def run_validation(results: Results, cfg_validate=None, needs_text: bool = True) -> ValidationReport:
    """Load-time validation (what the training tasks call before splitting); the report is kept in
    ``results.meta["validation"]`` so the run can log it later (:func:`log_validation`)."""
    report = check_results(results, cfg_validate, needs_text=needs_text)
    results.meta["validation"] = report.to_dict()
    return enforce(report, cfg_validate)


def validate_split(res: Results, inst: dict, llms: dict, X: dict, cfg_validate=None, run=None,
                   reference_size: int | None = None, text_features: bool = True) -> ValidationReport:
    """Size and leakage checks on a split and its features, and logging of the full report.

    Parameters
    ----------
    res : Results
        The data (its load-time report in ``res.meta["validation"]`` is extended).
    inst, llms : dict of str to list of str
        Instance ids and LLM names per part (``train``/``val``/``test``).
    X : dict of str to ndarray of shape (n_ids, d)
        Features of each instance part (what near-duplicates are measured in).
    cfg_validate : mapping, optional
        Validation options (``conf/validate``).
    run : RunLogger, optional
        Where the report is logged.
    reference_size : int, optional
        The selector's reference-set size.
    text_features : bool
        Whether ``X`` describes prompt text (success-pattern features have no text to leak).
    """
    o = _opts(cfg_validate)
    stored = res.meta.get("validation")
    report = (ValidationReport(stored["data"], stored["n_llms"], stored["n_instances"],
                               [Issue(**i) for i in stored["issues"]], stored.get("flagged", {}),
                               stored.get("excluded"))
              if stored else check_results(res, cfg_validate))
    issue, leaks = leakage_issue(res, inst, X, o, text_features)
    new = size_issues(inst, llms, reference_size, o) + ([issue] if issue is not None else [])
    if new:
        report.issues += new
        enforce(ValidationReport(report.data, report.n_llms, report.n_instances, new), cfg_validate)
    if run is not None:
        log_validation(run, report, leaks)
    return report


def size_issues(inst: dict, llms: dict, reference_size: int | None, o: dict) -> list[Issue]:
    """Splits too small to learn or judge from: ``reference_share`` and ``few_llms`` issues.

    Parameters
    ----------
    inst, llms : dict
        Instance ids and LLM names per part (``train``, ``val``, ``test``).
    reference_size : int or None
        Reference prompts the selector takes from the training prompts (None: not checked).
    o : dict
        Options (``max_reference_share``, ``min_split_llms``).
    """
    out = []
    n_train, n_llms = len(inst.get("train", [])), len(llms.get("train", []))
    if reference_size and n_train and reference_size / n_train > o["max_reference_share"]:
        left = max(n_train - int(reference_size), 0)
        out.append(Issue("reference_share", int(reference_size), [int(reference_size), n_train],
                         f"the reference set takes {reference_size} of the {n_train} training prompts "
                         f"({reference_size / n_train:.0%} > max_reference_share {o['max_reference_share']:.0%}): "
                         f"the generic assessor learns from the other {left} prompts x {n_llms} training LLMs = "
                         f"{left * n_llms} (LLM, prompt) pairs; use a smaller selector.size or more prompts"))
    counts = {part: len(llms.get(part, [])) for part in ("train", "val", "test")}
    few = [(part, n) for part, n in counts.items() if part != "train" and 0 < n < o["min_split_llms"]]
    if few:
        what = {"val": "model selection", "test": "the test metrics"}
        out.append(Issue("few_llms", len(few), [list(f) for f in few],
                         f"the LLM split ({counts['train']} train / {counts['val']} validation / {counts['test']} test "
                         f"of {sum(counts.values())} LLMs) leaves "
                         + " and ".join(f"{n} {'validation' if p == 'val' else 'test'} LLM ({what[p]} rest on it)"
                                        for p, n in few)
                         + f", fewer than min_split_llms={o['min_split_llms']}; set llm_split.n_val/n_test or add LLMs"))
    return out


def leakage_issue(res: Results, inst: dict, X: dict, o: dict, text_features: bool = True) -> tuple[Issue | None, pd.DataFrame]:
    """The ``leakage`` issue (or None) and all leaking pairs between the train and test instances.

    ``inst`` and ``X`` hold the ids and features per part; ``text_features`` false (success-pattern
    features describe results, not prompt text: near-duplicates there are not leakage) skips the check.
    """
    leaks = pd.DataFrame(columns=["test_id", "train_id", "cosine", "exact_text"])
    if not (o["leakage"] and text_features and len(inst.get("test", [])) and len(inst.get("train", []))):
        return None, leaks
    leaks = check_leakage(X["train"], X["test"], inst["train"], inst["test"], o["near_duplicate"],
                          train_texts=res.prompts(inst["train"]), test_texts=res.prompts(inst["test"]))
    if not len(leaks):
        return None, leaks
    n, exact = o["max_names"], int(leaks["exact_text"].sum())
    return Issue("leakage", len(leaks), leaks.head(n)[["test_id", "train_id", "cosine"]].values.tolist(),
                 f"{len(leaks)} test prompt(s) with a train prompt at feature cosine >= {o['near_duplicate']} "
                 f"({exact} identical texts; the other {len(leaks) - exact} differ in text but not in features, "
                 "e.g. long shared prefixes cut by the featurizer's truncation), e.g. "
                 + ", ".join(f"{t}~{r} ({c:.3f})" for t, r, c, _ in leaks.head(n).itertuples(index=False))
                 + _more(len(leaks), n)), leaks


def log_validation(run, report: ValidationReport, leaks: pd.DataFrame | None = None) -> None:
    """Log counts as metrics ``validate.<check>``, the report as JSON/text, leak pairs as a table."""
    run.log_metrics({f"validate.{k}": float(v) for k, v in report.counts().items()} | {
        "validate.n_issues": float(len(report.issues))})
    run.log_dict(report.to_dict(), "validate/report.json")
    run.log_text(str(report), "validate/report.txt")
    if leaks is not None and len(leaks):
        run.log_table(leaks, "validate/leakage.csv")
