"""Leave the blocks that validation flagged out of a run, and say so.

A grading failure (a dataset where nearly every LLM is constant), an LLM or a dataset with too few
answered cells, or instances without prompt text would otherwise be averaged into the headline
metrics silently. By default (``validate.exclude: true``) :func:`exclude_flagged` removes them
before the split, so they reach neither training nor the test metrics; the run prints, logs and
records what was left out. ``validate.exclude: false`` keeps them and says loudly that the
headline metrics include them; ``validate.strict: true`` makes them errors instead.
"""
from __future__ import annotations

import logging

from assessors.data.results import Results
from assessors.data.validate import ValidationReport, _opts
from assessors.errors import DataError

log = logging.getLogger(__name__)


def exclude_flagged(results: Results, report: ValidationReport, cfg_validate=None) -> Results:
    """``results`` without the flagged datasets, LLMs and instances of ``report`` (per ``exclude``).

    Returns
    -------
    Results
        A subset (or ``results`` itself when nothing is flagged or ``exclude`` is false), whose
        ``meta["validation"]`` holds the report with its ``excluded`` decision and
        ``meta["excluded"]`` the counts left out.
    """
    if not report.flagged:
        return results
    report.excluded = bool(_opts(cfg_validate)["exclude"])
    log.warning("%s: %s", results.name, report.flagged_text())
    if not report.excluded:
        results.meta["validation"] = report.to_dict()
        return results
    datasets = set(report.flagged.get("datasets", []))
    no_text = set(report.flagged.get("instances", []))
    drop_llms = set(report.flagged.get("llms", []))
    groups = results.instances["subgroup"].fillna("<none>").astype(str)
    keep_ids = [i for i, g in zip(results.instance_ids, groups) if g not in datasets and i not in no_text]
    keep_llms = [m for m in results.llms if m not in drop_llms]
    if not keep_ids or not keep_llms:
        raise DataError(f"{results.name}: validation flagged every instance or every LLM ({report.flagged_text()}); "
                        "fix the data, or set validate.exclude=false to run on it anyway")
    out = results.subset(keep_llms, keep_ids)
    out.meta["excluded"] = {"datasets": sorted(datasets), "llms": sorted(drop_llms),
                            "n_instances": results.shape[1] - len(keep_ids), "n_llms": results.shape[0] - len(keep_llms)}
    out.meta["validation"] = report.to_dict()
    return out


def excluded_summary(results: Results) -> dict[str, str]:
    """MLflow tags naming what validation left out of the run (empty when nothing)."""
    ex = results.meta.get("excluded")
    if not ex:
        return {}
    return {"validate.excluded_datasets": ",".join(ex["datasets"])[:5000] or "-",
            "validate.excluded_llms": ",".join(ex["llms"])[:5000] or "-",
            "validate.excluded_instances": str(ex["n_instances"])}
