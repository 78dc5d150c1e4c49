"""The OOD sweep's report: tables and plots of AUC, ECE and 90% band coverage per preset and budget.

Input is the sweep's long table, one row per (preset, seed, method, budget ``k``, group): ``auc``,
``ece``, ``band`` (share of test LLMs whose realised accuracy lies in their 90% band; the latent
assessor only), ``n_llms``, ``n_prompts``, ``below_chance`` and the cell's wall time ``cell_s``.
Rows with a ``group`` are the in-distribution preset scored on one hold-out's subtasks.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from assessors.reporting.plots import _colors, save_figure
from assessors.reporting.tables import format_console, to_markdown

#: The assessor the sweep is about and the same assessor as served; the other methods are baselines.
MAIN, SERVED = "latent", "served"


def _overall(cells: pd.DataFrame) -> pd.DataFrame:
    return cells[cells["group"].isna()]


def metric_table(cells: pd.DataFrame, metric: str, presets: list[str] | None = None) -> pd.DataFrame:
    """Mean over seeds of ``metric``: rows preset, columns ``method k=<k>`` (DataFrame (n_presets, n_cols))."""
    if metric not in cells:
        return pd.DataFrame()
    df = _overall(cells).dropna(subset=[metric])
    wide = df.groupby(["preset", "method", "k"])[metric].mean().unstack(["method", "k"])
    wide = wide.reindex(columns=sorted(wide.columns, key=lambda c: (c[0] not in (MAIN, SERVED), c[0], c[1])))
    wide.columns = [f"{m} k={k}" for m, k in wide.columns]
    order = [p for p in (presets or []) if p in wide.index] + [p for p in wide.index if p not in (presets or [])]
    return wide.reindex(order)


def holdout_table(cells: pd.DataFrame) -> pd.DataFrame:
    """Per subtask hold-out and seed: the latent assessor at each budget, the best baseline at the same
    budget, and the same assessor in distribution on the same subtasks (the in-distribution preset's
    row with that ``group``); DataFrame with one row per (preset, seed)."""
    ind = cells[cells["group"].notna() & (cells["method"] == MAIN)].set_index(["group", "seed"])["auc"]
    rows = []
    for (preset, seed), df in _overall(cells).groupby(["preset", "seed"]):
        ks = sorted(df["k"].unique())
        if (preset, seed) not in ind.index and len(ks) < 2:
            continue  # not a task hold-out
        row = {"preset": preset, "seed": seed}
        for k in ks:
            at = df[df["k"] == k]
            lat, served = at.loc[at["method"] == MAIN, "auc"], at.loc[at["method"] == SERVED, "auc"]
            base = at[~at["method"].isin([MAIN, SERVED])]
            row[f"latent k={k}"] = float(lat.iloc[0]) if len(lat) else np.nan
            if len(served):
                row[f"served k={k}"] = float(served.iloc[0])
            row[f"best baseline k={k}"] = float(base["auc"].max()) if len(base) else np.nan
            row[f"(which) k={k}"] = base.loc[base["auc"].idxmax(), "method"] if len(base) else ""
        row["in distribution"] = float(ind.get((preset, seed), np.nan))
        rows.append(row)
    return pd.DataFrame(rows).set_index(["preset", "seed"]) if rows else pd.DataFrame()


def budget_figure(cells: pd.DataFrame, metric: str, label: str, presets: list[str]) -> Figure | None:
    """One panel per task hold-out: ``metric`` against the budget ``k``, a line per method (mean over
    seeds, bars: min-max over seeds); the in-distribution value as a dashed line."""
    df = _overall(cells).dropna(subset=[metric])
    holdouts = [p for p in presets if df.loc[df["preset"] == p, "k"].nunique() > 1]
    if not holdouts:
        return None
    fig = Figure(figsize=(4 * len(holdouts), 3.4), layout="constrained")
    axes = fig.subplots(1, len(holdouts), squeeze=False)[0]
    methods = sorted(df["method"].unique(), key=lambda m: (m != MAIN, m))
    colors = dict(zip(methods, _colors(len(methods))))
    ind = cells[cells["group"].notna() & (cells["method"] == MAIN)].dropna(subset=[metric])
    for ax, preset in zip(axes, holdouts):
        for method in methods:
            g = df[(df["preset"] == preset) & (df["method"] == method)].groupby("k")[metric]
            if g.ngroups == 0:
                continue
            mean, lo, hi = g.mean(), g.min(), g.max()
            ax.errorbar(mean.index, mean.values, yerr=[mean - lo, hi - mean], marker="o", capsize=3,
                        color=colors[method], label=method, lw=2 if method == MAIN else 1)
        same = ind.loc[ind["group"] == preset, metric]
        if len(same):
            ax.axhline(same.mean(), ls="--", color="k", lw=1, label="latent in distribution")
        if metric == "auc":
            ax.axhline(0.5, ls=":", color="grey", lw=1)
        ax.set_title(preset)
        ax.set_xlabel("calibration prompts k")
        ax.set_ylabel(label)
    axes[0].legend(fontsize=7)
    return fig


def build_report(cells: pd.DataFrame, out_dir: str | Path, presets: list[str], commit: str | None = None) -> Path:
    """Write ``ood_sweep_report.md``, ``cells.csv`` and the figures into ``out_dir``; returns the report's path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    cells.to_csv(out / "cells.csv", index=False)
    seeds = sorted(cells["seed"].unique())
    lines = ["# OOD sweep report", "",
             f"{cells[['preset', 'seed']].drop_duplicates().shape[0]} cells: presets "
             f"{', '.join(p for p in presets if p in set(cells['preset']))}; "
             f"seeds {', '.join(map(str, seeds))}" + (f"; commit {commit}" if commit else "") + ".",
             "Mean over seeds; `k`: prompts of the held-out task answered by the training LLMs (the latent "
             "assessor is calibrated on them, `all_train_data` refitted with them; the other baselines do "
             "not use them). Scored on the held-out prompts outside the largest calibration set.", ""]
    for metric, title in [("auc", "Mean test AUC over test LLMs"), ("ece", "Mean ECE over test LLMs"),
                          ("band", "90% band coverage (share of test LLMs)"),
                          ("below_chance", "Share of test LLMs with AUC below 0.5"),
                          ("fallback", "Share of test LLMs served a fallback (served)")]:
        table = metric_table(cells, metric, presets)
        if not table.empty:
            lines += [f"## {title}", "", to_markdown(table), ""]
    holdouts = holdout_table(cells)
    if not holdouts.empty:
        holdouts.to_csv(out / "holdouts.csv")
        lines += ["## Task hold-outs by seed: calibrated vs best baseline vs in distribution", "",
                  to_markdown(holdouts), ""]
    for metric, label in [("auc", "mean test AUC"), ("ece", "mean ECE"), ("band", "90% band coverage")]:
        fig = budget_figure(cells, metric, label, presets)
        if fig is not None:
            save_figure(fig, out / f"{metric}_by_budget.png")
            lines += [f"![{label} by budget]({metric}_by_budget.png)", ""]
    wall = cells.drop_duplicates(["preset", "seed"]).groupby("preset")["cell_s"].agg(["mean", "max"])
    lines += ["## Cell wall time (s)", "", to_markdown(wall, floatfmt=".0f"), ""]
    path = out / "ood_sweep_report.md"
    path.write_text("\n".join(lines))
    return path


def console_summary(cells: pd.DataFrame, path: Path, where: str, next_command: str,
                    presets: list[str] | None = None) -> str:
    """The console's summary: the AUC table (rows in the order of ``presets``), where the report is,
    the next command."""
    table = metric_table(cells, "auc", presets)
    return "\n".join([format_console(table, title="OOD sweep: mean test AUC over test LLMs (mean over seeds)"),
                      f"\nReport: {path}", f"Logged: {where} (artifacts ood_sweep_report/)", f"Next: {next_command}"])
