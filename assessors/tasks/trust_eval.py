"""``experiment=trust_frontier``: the trust report and fallback policy per scenario (:mod:`assessors.trust.evaluate`).

Each scenario (``trust_eval.scenarios.<name>``) replaces config nodes (data, LLM split, ...) of
the base config; per scenario the generic assessor is fitted, the trust model and the fallback
policy are fitted on the validation LLMs and scored on the test LLMs.
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

from assessors.tasks.prepare import Prepared, fit_generic, prepare
from assessors.tasks.wrapper import task_wrapper
from assessors.threads import budgeted, fit_threads
from assessors.metrics import masked_auc
from assessors.trust.evaluate import FLAG_SETS, flag_table, scatter, score_llms, summarise
from assessors.trust.fit import LLMPart
from assessors.trust.report import training_profile

log = logging.getLogger(__name__)


def _part(prep: Prepared, name: str, ref_ids: list[str]) -> LLMPart:
    return LLMPart(prep.llms[name], prep.results.matrix(prep.llms[name], ref_ids), prep.X[name], prep.S(name, name))


def _expected(te, val: pd.DataFrame, test: pd.DataFrame, scenario: str = "") -> dict:
    """Fit the trust model on validation LLMs; add its expected AUC bands to ``test``."""
    tm, band = expected_band(te.trust_model, val, test, scenario)
    test["expected_auc"], test["expected_low"], test["expected_high"] = band["estimate"], band["low"], band["high"]
    # the same calibration on the LOO reference AUC alone (fewer signals to extrapolate on)
    _, band1 = expected_band(te.trust_model, val, test, scenario, features=["loo_auc"])
    test["expected_loo_auc"], test["expected_loo_low"], test["expected_loo_high"] = (
        band1["estimate"], band1["low"], band1["high"])
    return {"trust_model_n_fit": tm.n_fit_ if tm else 0, "trust_model_halfwidth": tm.halfwidth_ if tm else np.nan}


def expected_band(node, val: pd.DataFrame, test: pd.DataFrame, scenario: str = "", **overrides):
    """``(TrustModel or None, frame estimate/low/high per test LLM)`` fitted on the validation LLMs.

    When no validation LLM has a finite AUC (e.g. every one answered all its validation prompts the
    same way, as all-zero LLMs do) the band cannot be fitted: a warning says so and the band is NaN.
    """
    y = val["auc_generic"].to_numpy(dtype=np.float64)
    if not np.isfinite(y).any():
        log.warning("%s: the expected-AUC band cannot be fitted: none of the %d validation LLMs has a finite AUC "
                    "(each answered every validation prompt the same way, e.g. all zero)", scenario or "trust", len(val))
        nan = np.full(len(test), np.nan)
        return None, pd.DataFrame({"estimate": nan, "low": nan, "high": nan}, index=test.index)
    tm = instantiate(node, **overrides).fit(val, y)
    return tm, tm.predict(test)


def evaluate_scenario(cfg, name: str) -> tuple[pd.DataFrame, dict]:
    """Per-test-LLM table for one scenario, plus what was chosen on validation LLMs."""
    t0 = time.perf_counter()
    te = cfg.trust_eval
    prep = prepare(cfg)
    generic, ref_ids = fit_generic(cfg, prep)
    log.info("%s: generic assessor fitted in %.0fs", name, time.perf_counter() - t0)
    opts = OmegaConf.to_container(te.report, resolve=True)
    T = prep.results.matrix(prep.llms["train"], ref_ids)
    prof = training_profile(T, opts.get("k", 3))
    specific = instantiate(budgeted(cfg.specific, fit_threads(threads=cfg.get("threads"))))
    val, Pg_v, Pr_v, S_v, fl_v = score_llms(generic, specific, T, prep.llms["train"], _part(prep, "val", ref_ids),
                                            "val", prof, opts)
    test, Pg_t, Pr_t, S_t, fl_t = score_llms(generic, specific, T, prep.llms["train"], _part(prep, "test", ref_ids),
                                             "test", prof, opts)
    chosen = _expected(te, val, test, name)
    policies = {"policy": instantiate(te.fallback)}
    policies.update({f"policy_{k}": instantiate(te.fallback, triggers=list(v)) for k, v in FLAG_SETS.items()})
    for col, pol in policies.items():
        pol.fit(Pg_v, Pr_v, S_v, fl_v)
        test[f"auc_{col}"] = [masked_auc(S_t[k], pol.blend(Pg_t[k], Pr_t[k], fl_t[k])) for k in range(len(test))]
        test[f"weight_{col}"] = [pol.weight_for(f) for f in fl_t]
        chosen[f"{col}_weight"] = pol.weight_
        chosen[f"{col}_chosen_by"] = pol.chosen_by_
    for part in (val, test):
        part.insert(0, "scenario", name)
    chosen["time_s"] = time.perf_counter() - t0
    return pd.concat([val, test], ignore_index=True), chosen


def _report(run, out_dir: Path, table: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """Flags, summary and figure of the pooled table, written to ``out_dir`` and logged to ``run``."""
    from assessors.reporting.tables import to_markdown

    test = table[table["part"] == "test"]
    flags = flag_table(test)
    by_scen = {s: flag_table(g) for s, g in test.groupby("scenario", sort=False)}
    summ = summarise(test)
    fig = scatter(table)
    for path, df in {"per_llm.csv": table, "flags.csv": flags, "summary.csv": summ}.items():
        df.to_csv(out_dir / path, index=path != "per_llm.csv")
        run.log_table(df, f"trust_eval/{path}")
    fig.savefig(out_dir / "similarity_vs_auc.png", dpi=120, bbox_inches="tight")
    run.log_figure(fig, "trust_eval/similarity_vs_auc.png")
    md = (f"## Flags (pooled test LLMs)\n\n{to_markdown(flags)}\n\n## Summary\n\n{to_markdown(summ)}\n\n"
          + "".join(f"## Flags: {s}\n\n{to_markdown(f)}\n\n" for s, f in by_scen.items()))
    (out_dir / "report.md").write_text(md)
    run.log_text(md, "trust_eval/report.md")
    return flags, summ, md


@task_wrapper("trust_eval")
def run(cfg, run) -> dict[str, float]:
    """Task: every scenario in ``cfg.trust_eval.scenarios``; logs tables, figure and summary."""
    out_dir = Path(cfg.paths.outputs) / "trust_eval"
    out_dir.mkdir(parents=True, exist_ok=True)
    tables, chosen = [], {}
    for name, sc in cfg.trust_eval.scenarios.items():
        scfg = cfg.copy()
        for key, node in sc.items():  # replace, not merge: e.g. data configs have different keys
            OmegaConf.update(scfg, key, node, merge=False, force_add=True)
        tab, ch = evaluate_scenario(scfg, name)
        tables.append(tab)
        chosen[name] = ch
        tab.to_csv(out_dir / "per_llm.partial.csv", mode="a", header=len(tables) == 1, index=False)
    flags, summ, _ = _report(run, out_dir, pd.concat(tables, ignore_index=True))
    result = {"flags": flags.reset_index().to_dict("records"), "summary": summ.reset_index().to_dict("records"),
              "chosen": chosen}
    (out_dir / "summary.json").write_text(json.dumps(result, indent=1, default=float))
    metrics = {f"{s}.{k}": float(v) for s, r in summ.iterrows() for k, v in r.items() if np.isfinite(v)}
    metrics.update({f"flag.{f}.{k}": float(v) for f, r in flags.iterrows() for k, v in r.items()
                    if k in ("recall", "precision", "false_alarm_rate") and np.isfinite(v)})
    run.log_metrics(metrics)
    # what sweeps optimise: NaN (not missing) when no test LLM did worse than its reference-only assessor
    return {"flag.population.recall": float(flags.loc["population", "recall"]), **metrics}
