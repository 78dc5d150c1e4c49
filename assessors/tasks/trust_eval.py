"""``experiment=trust_frontier``: the trust report, its verdict and the served predictor, per scenario.

Each scenario (``trust_eval.scenarios.<name>``) replaces config nodes (data, LLM split, ...) of the
base config. Per scenario the configured assessor (any family) is fitted; each validation and test LLM
is described by its answers on the reference prompts; the report's thresholds and fallback are chosen
on the validation LLMs' reports about the validation prompts (``trust.validated_policy``); each test LLM is
then served by the serving path under them (:func:`~assessors.trust.posterior_eval.served_outcomes`) and
scored on the test prompts (:func:`verdict_scores`: recall of failures, false alarms, band coverage, AUC of
the model and of what is served). In the
outcome columns ``latent`` names the fitted assessor's own predictions, whatever its family.
"""
from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import numpy as np
import pandas as pd
from hydra.utils import instantiate
from omegaconf import OmegaConf

from assessors.tasks.prepare import fit_generic, prepare
from assessors.tasks.wrapper import task_wrapper
from assessors.trust.posterior_report import OK, OUT

log = logging.getLogger(__name__)

#: Per-scenario numbers of :func:`verdict_scores` that go to the summary and the run's metrics.
SUMMARY = ("n_llms", "n_failures", "n_flagged", "n_fallback", "recall", "false_alarm_rate", "accuracy_band_coverage",
           "auc_band_coverage", "mean_auc_latent", "mean_auc_reference_only", "mean_auc_with_fallback")


def evaluate_scenario(cfg, name: str) -> tuple[pd.DataFrame, dict]:
    """Per-test-LLM rows for one scenario, and its summary (with what was chosen on validation LLMs)."""
    from assessors.trust.posterior_eval import fit_validated, llm_outcomes, served_outcomes
    from assessors.trust.posterior_policy import PosteriorTrustPolicy

    t0 = time.perf_counter()
    prep = prepare(cfg)
    assessor, ref_ids = fit_generic(cfg, prep)
    T = prep.results.matrix(prep.llms["train"], ref_ids)  # the training LLMs' reference answers
    X_ref = np.asarray(assessor.reference_features_, dtype=np.float32)

    def given(part: str) -> tuple:
        return X_ref, prep.results.matrix(prep.llms[part], ref_ids), prep.X[part], prep.S(part, part), prep.llms[part]

    known = {"training_answers": T, "training_reference": T}
    chooser = fit_validated(instantiate(cfg.trust.validated_policy), *llm_outcomes(assessor, *given("val"),
                                                                                     seed=int(cfg.seed), **known))
    opts = chooser.options()
    # the test LLMs scored on what the serving path serves them under the chosen policy, and what happened to them
    served = served_outcomes(PosteriorTrustPolicy(**opts, seed=int(cfg.seed)), assessor, *given("test"), outcomes=True,
                             **known)
    scores = verdict_scores(served, [s.pop("outcome") for s in served])
    rows = pd.DataFrame(scores.pop("llms")).assign(scenario=name)
    summary = {k: scores[k] for k in SUMMARY}
    summary.update(family=type(assessor).__name__, chosen=opts, chosen_by=chooser.chosen_by_,
                   time_s=time.perf_counter() - t0)
    log.info("%s: recall %s, false alarms %s (%d test LLMs, %.0fs)", name, summary["recall"],
             summary["false_alarm_rate"], summary["n_llms"], summary["time_s"])
    return rows, summary


def verdict_rows(served, outcomes) -> list[dict]:
    """One row per held-out LLM: its verdict, whether it failed, the predictor it is served and its AUC.

    ``served`` are :func:`~assessors.trust.posterior_eval.served_outcomes` (what the serving path gives
    each LLM), ``outcomes`` the :func:`~assessors.trust.posterior_eval.llm_outcome` dicts of the same LLMs.
    A *failure* is a latent AUC below the reference-only fallback's, or a realised accuracy outside the
    report's band. ``served_auc_band`` is the band of what the LLM is served and ``served_auc_in_band``
    whether its AUC lies in it (None without a band); ``served_accuracy_band`` / ``served_accuracy_in_band``
    the same for the realised accuracy.
    """
    rows = []
    for r, o in zip(served, outcomes):
        fb = r["fallback"]
        acc_in = _inside(r["accuracy_band"], o["realised_accuracy"])
        rows.append({"llm": o["llm"], "verdict": r["verdict"], "flags": r["flags"], "notes": r["notes"],
                     "failure": bool(o["auc_latent"] < o["auc_reference_only"] or not acc_in),
                     "fallback": fb["predictor"] if fb["applied"] else "latent",
                     "auc_with_fallback": r["auc_served"], "brier_with_fallback": r["brier_served"],
                     "accuracy_in_band": acc_in, "auc_in_band": bool(_inside(r["auc_band"], o["auc_latent"])),
                     "served_auc_band": fb["auc_band"], "served_auc_band_from": fb["auc_band_from"],
                     "served_auc_in_band": _inside(fb["auc_band"], r["auc_served"]),
                     "served_accuracy_band": fb["accuracy_band"], "served_accuracy_band_from": fb["accuracy_band_from"],
                     "served_accuracy_in_band": _inside(fb["accuracy_band"], o["realised_accuracy"]),
                     **{k: r[k] for k in ("expected_accuracy", "accuracy_band", "auc_band", "prompt_ood_share")},
                     **{k: v for k, v in o.items() if k != "llm"}})
    return rows


def _inside(band, value) -> bool | None:
    """Whether ``value`` lies in ``band`` ([low, high], None ends: never); None without a band."""
    return None if band is None else bool(None not in band and band[0] <= value <= band[1])


def _served_coverage(rows, what: str, n_key: str) -> dict:
    """Share of the rows with a served ``what`` band whose realised value lies in it, and how many have one."""
    inside = [r[f"served_{what}_in_band"] for r in rows if r[f"served_{what}_in_band"] is not None]
    return {f"served_{what}_band_coverage": float(np.mean(inside)) if inside else None, n_key: len(inside)}


def _mean(rows, key, sel):
    return float(np.nanmean([r[key] for r, s in zip(rows, sel) if s])) if sel.any() else None


def verdict_scores(served, outcomes) -> dict:
    """Recall, false alarms, band coverage and AUC with the fallback of held-out LLMs (see :func:`verdict_rows`).

    Flagged = a verdict other than ``ok``; recall = flagged failures over failures; false alarms =
    flagged LLMs that did not fail over flagged LLMs. ``served_auc_band_coverage``: the share of LLMs
    with a served band whose served AUC lies in it (``n_served_band`` of them have one);
    ``served_accuracy_band_coverage`` the same for the realised accuracy.
    """
    rows = verdict_rows(served, outcomes)
    fail = np.array([r["failure"] for r in rows])
    flagged = np.array([r["verdict"] != OK for r in rows])
    applied = np.array([r["fallback"] != "latent" for r in rows])
    every = np.ones(len(rows), dtype=bool)
    return {"n_llms": len(rows), "n_failures": int(fail.sum()), "n_flagged": int(flagged.sum()),
            "n_out_of_population": int(sum(r["verdict"] == OUT for r in rows)),
            "n_fallback": int(applied.sum()), "n_flagged_failures": int((flagged & fail).sum()),
            "recall": float(flagged[fail].mean()) if fail.any() else None,
            "false_alarm_rate": float((~fail[flagged]).mean()) if flagged.any() else None,
            "auc_band_coverage": float(np.mean([r["auc_in_band"] for r in rows])),
            "accuracy_band_coverage": float(np.mean([r["accuracy_in_band"] for r in rows])),
            **_served_coverage(rows, "auc", "n_served_band"),
            **_served_coverage(rows, "accuracy", "n_served_accuracy_band"),
            **{f"mean_auc_{k}": _mean(rows, f"auc_{k}", every) for k in ("latent", "reference_only", "with_fallback")},
            "fallback_llms_auc": {k: _mean(rows, f"auc_{k}", applied) for k in ("with_fallback", "reference_only", "latent")},
            "other_llms_auc": {k: _mean(rows, f"auc_{k}", ~applied) for k in ("with_fallback", "latent")},
            "llms": rows}


@task_wrapper("trust_eval")
def run(cfg, run) -> dict[str, float]:
    """Task: every scenario in ``cfg.trust_eval.scenarios``; logs the per-LLM table and the summary."""
    from assessors.reporting.tables import to_markdown

    out_dir = Path(cfg.paths.outputs) / "trust_eval"
    out_dir.mkdir(parents=True, exist_ok=True)
    tables, summaries = [], {}
    for name, sc in cfg.trust_eval.scenarios.items():
        scfg = cfg.copy()
        for key, node in sc.items():  # replace, not merge: e.g. data configs have different keys
            OmegaConf.update(scfg, key, node, merge=False, force_add=True)
        rows, summaries[name] = evaluate_scenario(scfg, name)
        tables.append(rows)
    table = pd.concat(tables, ignore_index=True)
    table.to_csv(out_dir / "per_llm.csv", index=False)
    run.log_table(table, "trust_eval/per_llm.csv")
    summ = pd.DataFrame({s: {k: v for k, v in d.items() if k in SUMMARY} for s, d in summaries.items()}).T
    md = f"## Trust verdicts on the test LLMs\n\n{to_markdown(summ)}\n"
    (out_dir / "report.md").write_text(md)
    run.log_text(md, "trust_eval/report.md")
    (out_dir / "summary.json").write_text(json.dumps(summaries, indent=1, default=str))
    metrics = {f"{s}.{k}": float(v) for s, d in summaries.items() for k, v in d.items()
               if k in SUMMARY and v is not None and np.isfinite(v)}
    run.log_metrics(metrics)
    fail = sum(d["n_failures"] for d in summaries.values())
    caught = sum(round((d["recall"] or 0) * d["n_failures"]) for d in summaries.values())
    # what sweeps optimise: NaN (not missing) when no test LLM failed
    return {"recall": caught / fail if fail else float("nan"), **metrics}
