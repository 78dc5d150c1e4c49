"""``experiment=validate``: load a data set, run the data checks (and the train/test leakage check
on its split and features), print and log the report (:mod:`assessors.data.validate`)."""
from __future__ import annotations

from hydra.utils import instantiate

from assessors.data.results import Results
from assessors.data.validate import _opts, check_results, enforce, leakage_issue, log_validation
from assessors.tasks.prepare import featurize
from assessors.tasks.config import plain
from assessors.tasks.wrapper import task_wrapper


@task_wrapper("validate")
def run(cfg, run) -> dict[str, float]:
    """Task for ``python train.py experiment=validate``: load, check, (split, featurize, leakage), log."""
    vcfg = plain(cfg.get("validate"))
    results: Results = instantiate(cfg.data)
    report = check_results(results, vcfg)
    results.meta["validation"] = report.to_dict()
    leaks = None
    if _opts(vcfg)["leakage"] and results.has_prompts:
        inst = instantiate(cfg.split).split(results)
        llms = instantiate(cfg.llm_split).split(results)
        featurizer, X = featurize(cfg, results, inst, llms["train"])
        issue, leaks = leakage_issue(results, inst, X, _opts(vcfg), featurizer.reads == "prompts")
        report.issues += [issue] if issue is not None else []
    print(report)
    log_validation(run, report, leaks)
    enforce(report, vcfg)
    return {"validate.n_issues": float(len(report.issues)),
            **{f"validate.{k}": float(v) for k, v in report.counts().items()}}
