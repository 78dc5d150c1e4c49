"""Evaluation of the trust report and the fallback policy (``experiment=trust_frontier``).

For every scenario (data x LLM split): fit the generic assessor, then for each validation and
test LLM compute the trust report, the generic and the reference-only AUC. Fit the trust model
and the fallback policy on validation LLMs; score them on test LLMs. Pooled over scenarios:
a scatter of similarity against realised AUC, and the recall / precision of each flag at
catching test LLMs whose generic AUC is below their reference-only AUC.
"""
from __future__ import annotations

import logging

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from assessors.core.evidence import Evidence
from assessors.metrics import masked_auc
from assessors.trust.fit import LLMPart
from assessors.trust.report import trust_report

log = logging.getLogger(__name__)

#: Flags scored against "generic AUC < reference-only AUC" (``population`` = range or similarity).
FLAG_SETS = {"range": ("range_above", "range_below"), "low_similarity": ("low_similarity",),
             "population": ("range_above", "range_below", "low_similarity"),
             "loo_below_ref_only": ("generic_below_reference_only",),
             "any": ("range_above", "range_below", "low_similarity", "generic_below_reference_only")}


def score_llms(generic, specific, T: np.ndarray, train_llms: list[str], part: LLMPart, part_name: str, profile,
               opts: dict):
    """Trust reports and AUCs of ``part``'s LLMs on its prompts.

    Parameters
    ----------
    generic : fitted generic assessor
    specific : the specific assessor; each LLM's reference-only classifier is its ``describe``
    T : ndarray of shape (n_train_llms, n_reference)
        Training LLMs' reference results.
    part : LLMPart
        The LLMs scored, their reference results, the prompts' features and their successes.

    Returns (table, P_generic (k, m), P_reference_only (k, m), S (k, m), flag lists).
    """
    S, X, R = part.S, part.X, part.R
    Pg = generic.predict_proba(X, R)
    Pr = np.zeros_like(Pg)
    rows, flags = [], []
    for k, llm in enumerate(tqdm(part.llms, desc=f"trust {part_name}", leave=False)):
        spec = specific.describe(Evidence(generic.reference_features_, R[k]))
        Pr[k] = spec.predict_proba(X)
        rep = trust_report(R[k], T, train_llms, assessor=generic, reference_only_auc=spec.val_auc_,
                           profile=profile, **opts)
        flags.append(rep.flags)
        rows.append({"llm": llm, "part": part_name, **rep.signals(), "reference_only_cv_auc": rep.reference_only_auc,
                     "flags": ",".join(rep.flags), "nearest": rep.nearest[0][0] if rep.nearest else "",
                     "auc_generic": masked_auc(S[k], Pg[k]), "auc_reference_only": masked_auc(S[k], Pr[k]),
                     "test_accuracy": float(np.nanmean(S[k]))})
    return pd.DataFrame(rows), Pg, Pr, S, flags


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
