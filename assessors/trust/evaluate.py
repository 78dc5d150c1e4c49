"""Evaluation of the trust report and the fallback policy (``experiment=trust_frontier``).

For every scenario (data x LLM split): fit the generic assessor, then for each validation and
test LLM compute the trust report, the generic and the reference-only AUC. Fit the trust model
and the fallback policy on validation LLMs; score them on test LLMs. Pooled over scenarios:
a scatter of similarity against realised AUC, and the recall / precision of each flag at
catching test LLMs whose generic AUC is below their reference-only AUC.
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
from tqdm.auto import tqdm

from assessors.metrics import auc
from assessors.threads import budgeted, fit_threads
from assessors.trust.expected import TrustModel
from assessors.trust.fallback import FallbackPolicy
from assessors.trust.report import training_profile, trust_report

log = logging.getLogger(__name__)

#: Flags scored against "generic AUC < reference-only AUC" (``population`` = range or similarity).
FLAG_SETS = {"range": ("range_above", "range_below"), "low_similarity": ("low_similarity",),
             "population": ("range_above", "range_below", "low_similarity"),
             "loo_below_ref_only": ("generic_below_reference_only",),
             "any": ("range_above", "range_below", "low_similarity", "generic_below_reference_only")}


def _auc(S, P) -> float:
    keep = ~np.isnan(S)
    return auc(S[keep], P[keep])


def score_llms(cfg, prep, generic, ref_ids, part: str, inst_part: str, profile, opts: dict):
    """Trust reports and AUCs of the ``part`` LLMs on ``inst_part`` prompts.

    Returns (table, P_generic (k, m), P_reference_only (k, m), S (k, m), flag lists).
    """
    res, llms = prep.results, prep.llms[part]
    T = res.matrix(prep.llms["train"], ref_ids)
    R = res.matrix(llms, ref_ids)
    S, X = prep.S(part, inst_part), prep.X[inst_part]
    Pg = generic.predict_proba(X, R)
    Pr = np.zeros_like(Pg)
    rows, flags = [], []
    for k, llm in enumerate(tqdm(llms, desc=f"trust {part}", leave=False)):
        spec = instantiate(budgeted(cfg.specific, fit_threads(cfg=cfg))).fit(generic.reference_features_, R[k])
        Pr[k] = spec.predict_proba(X)
        rep = trust_report(R[k], T, prep.llms["train"], assessor=generic, reference_only_auc=spec.val_auc_,
                           profile=profile, **opts)
        flags.append(rep.flags)
        rows.append({"llm": llm, "part": part, **rep.signals(), "reference_only_cv_auc": rep.reference_only_auc,
                     "flags": ",".join(rep.flags), "nearest": rep.nearest[0][0] if rep.nearest else "",
                     "auc_generic": _auc(S[k], Pg[k]), "auc_reference_only": _auc(S[k], Pr[k]),
                     "test_accuracy": float(np.nanmean(S[k]))})
    return pd.DataFrame(rows), Pg, Pr, S, flags


def evaluate_scenario(cfg, name: str) -> tuple[pd.DataFrame, dict]:
    """Per-test-LLM table for one scenario, plus what was chosen on validation LLMs."""
    from assessors.pipeline import fit_generic, prepare

    t0 = time.perf_counter()
    te = cfg.trust_eval
    prep = prepare(cfg)
    generic, ref_ids = fit_generic(cfg, prep)
    log.info("%s: generic assessor fitted in %.0fs", name, time.perf_counter() - t0)
    opts = OmegaConf.to_container(te.report, resolve=True)
    prof = training_profile(prep.results.matrix(prep.llms["train"], ref_ids), opts.get("k", 3))
    val, Pg_v, Pr_v, S_v, fl_v = score_llms(cfg, prep, generic, ref_ids, "val", "val", prof, opts)
    test, Pg_t, Pr_t, S_t, fl_t = score_llms(cfg, prep, generic, ref_ids, "test", "test", prof, opts)

    tm, band = expected_band(te.trust_model, val, test, name)
    test["expected_auc"], test["expected_low"], test["expected_high"] = band["estimate"], band["low"], band["high"]
    chosen = {"trust_model_n_fit": tm.n_fit_ if tm else 0, "trust_model_halfwidth": tm.halfwidth_ if tm else np.nan}
    # the same calibration on the LOO reference AUC alone (fewer signals to extrapolate on)
    _, band1 = expected_band(te.trust_model, val, test, name, features=["loo_auc"])
    test["expected_loo_auc"], test["expected_loo_low"], test["expected_loo_high"] = (
        band1["estimate"], band1["low"], band1["high"])
    policies = {"policy": instantiate(te.fallback)}
    policies.update({f"policy_{k}": instantiate(te.fallback, triggers=list(v)) for k, v in FLAG_SETS.items()})
    for col, pol in policies.items():
        pol.fit(Pg_v, Pr_v, S_v, fl_v)
        test[f"auc_{col}"] = [_auc(S_t[k], pol.blend(Pg_t[k], Pr_t[k], fl_t[k])) for k in range(len(test))]
        test[f"weight_{col}"] = [pol.weight_for(f) for f in fl_t]
        chosen[f"{col}_weight"] = pol.weight_
        chosen[f"{col}_chosen_by"] = pol.chosen_by_
    for part in (val, test):
        part.insert(0, "scenario", name)
    chosen["time_s"] = time.perf_counter() - t0
    return pd.concat([val, test], ignore_index=True), chosen


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


def flag_table(test: pd.DataFrame) -> pd.DataFrame:
    """Recall / precision / false-alarm rate of each flag for "generic AUC < reference-only AUC"."""
    worse = (test["auc_generic"] < test["auc_reference_only"]).to_numpy()
    rows = []
    for name, members in FLAG_SETS.items():
        on = test["flags"].fillna("").map(lambda s: any(f in s.split(",") for f in members)).to_numpy()
        tp, fp, fn, tn = (int((on & worse).sum()), int((on & ~worse).sum()), int((~on & worse).sum()),
                          int((~on & ~worse).sum()))
        rows.append({"flag": name, "flagged": tp + fp, "generic_worse": tp + fn, "tp": tp, "fp": fp, "fn": fn,
                     "recall": tp / (tp + fn) if tp + fn else np.nan,
                     "precision": tp / (tp + fp) if tp + fp else np.nan,
                     "false_alarm_rate": fp / (fp + tn) if fp + tn else np.nan})
    return pd.DataFrame(rows).set_index("flag")


def summarise(test: pd.DataFrame) -> pd.DataFrame:
    """Per scenario: mean AUC of each method and paired policy-minus-generic difference (+- s.e.)."""
    out = {}
    for scen, g in test.groupby("scenario", sort=False):
        row = {"n_test_llms": len(g), "n_generic_worse": int((g["auc_generic"] < g["auc_reference_only"]).sum())}
        for col in [c for c in g.columns if c.startswith("auc_")]:
            row[f"mean_{col}"] = g[col].mean()
        d = g["auc_policy"] - g["auc_generic"]
        row["policy_minus_generic"] = d.mean()
        row["policy_minus_generic_se"] = d.std(ddof=1) / np.sqrt(d.notna().sum()) if d.notna().sum() > 1 else np.nan
        if "expected_low" in g:
            inside = (g["auc_generic"] >= g["expected_low"]) & (g["auc_generic"] <= g["expected_high"])
            row["band_coverage"] = inside[g["auc_generic"].notna()].mean()
            row["expected_abs_error"] = (g["expected_auc"] - g["auc_generic"]).abs().mean()
            inside = (g["auc_generic"] >= g["expected_loo_low"]) & (g["auc_generic"] <= g["expected_loo_high"])
            row["band_coverage_loo_only"] = inside[g["auc_generic"].notna()].mean()
            row["expected_abs_error_loo_only"] = (g["expected_loo_auc"] - g["auc_generic"]).abs().mean()
        corr = g[["similarity", "range_excess", "loo_auc", "auc_generic"]].corr(method="spearman")["auc_generic"]
        row.update({f"spearman_{k}_vs_auc": v for k, v in corr.drop("auc_generic").items()})
        out[scen] = row
    return pd.DataFrame(out).T


def scatter(table: pd.DataFrame):
    """Similarity vs realised generic AUC (left) and vs generic-minus-reference-only AUC (right)."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    markers = {"val": "o", "test": "s"}
    for i, (scen, g) in enumerate(table.groupby("scenario", sort=False)):
        for part, h in g.groupby("part"):
            kw = dict(color=f"C{i}", marker=markers.get(part, "o"), alpha=0.8, label=f"{scen} ({part})")
            axes[0].scatter(h["similarity"], h["auc_generic"], **kw)
            axes[1].scatter(h["similarity"], h["auc_generic"] - h["auc_reference_only"], **kw)
    axes[0].set(xlabel="similarity to nearest training LLMs (kappa, top-3 mean)", ylabel="generic assessor AUC")
    axes[1].axhline(0, color="grey", lw=0.8)
    axes[1].set(xlabel="similarity (kappa)", ylabel="generic AUC - reference-only AUC")
    axes[0].legend(fontsize=7)
    fig.suptitle("Trust signal vs realised per-LLM AUC")
    fig.tight_layout()
    return fig


def run(cfg) -> dict[str, float]:
    """Task: every scenario in ``cfg.trust_eval.scenarios``; logs tables, figure and summary."""
    from assessors.reporting.tables import to_markdown
    from assessors.tracking import tracker_from_cfg

    te = cfg.trust_eval
    out_dir = Path(cfg.paths.outputs) / "trust_eval"
    out_dir.mkdir(parents=True, exist_ok=True)
    tables, chosen = [], {}
    with tracker_from_cfg(cfg).start_run(cfg.get("run_name") or "trust_eval", cfg) as run:
        for name, sc in te.scenarios.items():
            scfg = cfg.copy()
            for key, node in sc.items():  # replace, not merge: e.g. data configs have different keys
                OmegaConf.update(scfg, key, node, merge=False, force_add=True)
            tab, ch = evaluate_scenario(scfg, name)
            tables.append(tab)
            chosen[name] = ch
            tab.to_csv(out_dir / "per_llm.partial.csv", mode="a", header=len(tables) == 1, index=False)
        table = pd.concat(tables, ignore_index=True)
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
        result = {"flags": flags.reset_index().to_dict("records"), "summary": summ.reset_index().to_dict("records"),
                  "chosen": chosen}
        (out_dir / "summary.json").write_text(json.dumps(result, indent=1, default=float))
        print(md)
        metrics = {f"{s}.{k}": float(v) for s, r in summ.iterrows() for k, v in r.items() if np.isfinite(v)}
        metrics.update({f"flag.{f}.{k}": float(v) for f, r in flags.iterrows() for k, v in r.items()
                        if k in ("recall", "precision", "false_alarm_rate") and np.isfinite(v)})
        run.log_metrics(metrics)
    return {"objective": float(flags.loc["population", "recall"]), **metrics}
