"""The grid report, built from the MLflow runs of a sweep (one section per split).

Winner rule (the paper's): every combination has a validation AUC per validation LLM; on
each validation LLM a combination's win rate is the share of other combinations it beats;
the winner has the highest average win rate. The winner's test AUC per test LLM is then
shown next to the specific assessor and the three baselines (all train data, reference
only, random selector), refitted with the winner's config.

Outputs: Table 2/5 (winner per split), Fig. 4/5/11 (AUC per test LLM by method), Fig. 6
(test AUC against reference size by selector); images and ``report.md`` go to a
``grid_report`` MLflow run and to ``out_dir``.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.figure import Figure

from assessors.errors import DataError
from assessors.grid.resume import TAG_HASH, TAG_INFEASIBLE

log = logging.getLogger(__name__)
COORDS = ["features", "selector", "classifier", "size"]


def load_grid_runs(tracker) -> pd.DataFrame:
    """FINISHED grid runs of the tracker's experiment, one row each (tags + metrics columns)."""
    mlflow = tracker._setup()
    runs = mlflow.search_runs(experiment_names=[tracker.experiment], filter_string="attributes.status = 'FINISHED'",
                              max_results=50000)
    if runs.empty or f"tags.{TAG_HASH}" not in runs:
        raise DataError(f"no finished grid runs in MLflow experiment {tracker.experiment!r} at {tracker.uri}")
    runs = runs[runs[f"tags.{TAG_HASH}"].notna()].copy()
    for c in ["split", *COORDS]:
        runs[c] = runs[f"tags.grid.{c}"]
    # a combination run twice counts once, the newest: a re-run after a report, or a re-run after
    # its classifier's config changed (a new hash, but the same cell of the grid)
    runs = runs.sort_values("start_time", ascending=False).drop_duplicates(["split", *COORDS])
    runs["size"] = runs["size"].astype(int)
    return runs.reset_index(drop=True)


def choose_winner(runs: pd.DataFrame) -> tuple[pd.Series, pd.DataFrame]:
    """Winner of one split's runs by average validation win rate.

    Returns
    -------
    winner : pandas.Series (the winning run's row)
    ranking : pandas.DataFrame with ``win_rate``, ``val_auc_mean``, ``test_auc_mean`` and the coordinates,
        sorted best first.
    """
    from assessors.metrics import rank_by_win_rate

    val_cols = [c for c in runs.columns if c.startswith("metrics.val_auc/")]
    if not val_cols:
        raise DataError("grid runs carry no per-LLM validation AUC metrics (metrics.val_auc/<llm>)")
    table = runs[val_cols].astype(float)
    table.index = runs.index
    ranked = rank_by_win_rate(table)  # the same rule (and tie-break) as the generic assessor's candidates
    ranking = runs.loc[ranked.index, COORDS + ["run_id"]].copy()
    ranking["win_rate"] = ranked["win_rate"]
    ranking["val_auc_mean"] = ranked["mean_val_auc"]
    ranking["test_auc_mean"] = runs.loc[ranked.index, "metrics.test_auc_mean"].astype(float)
    return runs.loc[ranking.index[0]], ranking


def size_curve(ranking: pd.DataFrame) -> pd.DataFrame:
    """Fig. 6 data: per (selector, size), test AUC of the combination with the best validation win rate.

    ``ranking`` is :func:`choose_winner`'s, sorted best first, so the first row per (selector, size) wins.
    """
    best = ranking.drop_duplicates(["selector", "size"])
    return best.pivot(index="size", columns="selector", values="test_auc_mean").sort_index()


def size_figure(curve: pd.DataFrame, title: str) -> Figure:
    fig = Figure(figsize=(8.4, 4.4), layout="constrained")
    ax = fig.add_subplot()
    cmap = colormaps["tab10"]
    for k, sel in enumerate(curve.columns):
        ax.plot(curve.index, curve[sel], marker="o", color=cmap(k % 10), label=sel)
    ax.set_xscale("log")
    ax.minorticks_off()  # the log axis would label minor ticks "4x10^1"; only the swept sizes matter
    ax.set_xticks(curve.index, [str(i) for i in curve.index])
    ax.set(xlabel="Reference-set size", ylabel="Mean test AUC (best config per point)", title=title)
    ax.grid(alpha=0.3)
    # outside the axes: with 8 selectors an inside legend covers lines
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.02, 0.5))
    return fig


def _baseline_section(split: str, table: pd.DataFrame, figures: dict) -> list[str]:
    """Report lines (and a figure added to ``figures``) comparing a split's winner with the baselines.

    ``table``: test AUC per test LLM (rows) x method (columns, ``generic`` first).
    """
    from assessors.reporting.plots import auc_by_method_bar
    from assessors.reporting.tables import to_markdown

    figures[f"{split}/fig4_auc_per_llm.png"] = auc_by_method_bar(table, main="generic", title=f"{split}: test AUC per LLM")
    means = table.mean()
    beaten = [m for m in table.columns if m != "generic" and means[m] > means["generic"]]
    return [f"![Fig. 4]({split}/fig4_auc_per_llm.png)", "", "Winner vs specific assessor and baselines "
            "(test AUC per test LLM):", "", to_markdown(pd.concat([table, means.to_frame("mean").T])), "",
            ("**The generic assessor loses on mean test AUC to: " + ", ".join(beaten) + ".**") if beaten
            else "The generic assessor has the best mean test AUC of all methods.", ""]


def build_report(tracker, out_dir: str | Path, baselines: Callable[[pd.Series], pd.DataFrame] | None = None,
                 splits: list[str] | None = None) -> Path:
    """Write ``out_dir/report.md`` (+ PNGs) from the experiment's grid runs and log it to MLflow.

    Parameters
    ----------
    tracker : assessors.tracking.MlflowTracker
    out_dir : path
    baselines : callable, optional
        ``winner run row -> AUC per test LLM x method`` of the specific assessor and the baselines
        refitted with each split's winner (costly but once per split); None leaves them out.
    splits : list of str, optional
        Only these splits (``grid.split_name``); default all in the experiment.
    """
    from assessors.reporting.plots import save_figure
    from assessors.reporting.tables import to_markdown

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    runs = load_grid_runs(tracker)
    if splits is not None:
        runs = runs[runs["split"].isin(list(splits))]
    infeasible = runs[runs[f"tags.{TAG_INFEASIBLE}"].notna()] if f"tags.{TAG_INFEASIBLE}" in runs else runs.iloc[:0]
    runs = runs.drop(index=infeasible.index)
    if runs.empty:
        raise DataError(f"no finished, feasible grid runs for splits {splits or 'any'} in experiment {tracker.experiment!r}")
    lines = [f"# Grid report: experiment `{tracker.experiment}`", "",
             f"{len(runs)} finished combinations; winner = highest average win rate of validation AUC over "
             "validation LLMs (the paper's rule).", ""]
    if len(infeasible):
        lines += [f"{len(infeasible)} combination(s) were infeasible on this data and are not ranked:", "",
                  to_markdown(infeasible.set_index(["split", *COORDS])[[f"tags.{TAG_INFEASIBLE}"]]
                              .rename(columns={f"tags.{TAG_INFEASIBLE}": "why"})), ""]
    winners, figures = [], {}
    for split, part in runs.groupby("split", sort=True):
        winner, ranking = choose_winner(part.reset_index(drop=True))
        w = {"split": split, **{c: winner[c] for c in COORDS},
             "classifier_params": winner.get("params.generic.selected_classifier"),
             "win_rate": float(ranking.iloc[0]["win_rate"]), "val_auc": float(winner["metrics.val_auc_mean"]),
             "test_auc": float(winner["metrics.test_auc_mean"]), "n_combinations": len(part)}
        winners.append(w)
        lines += [f"## Split `{split}`", "", f"{len(part)} combinations. Top 10 by validation win rate:", "",
                  to_markdown(ranking.drop(columns="run_id").head(10).set_index(COORDS)), ""]
        curve = size_curve(ranking)
        if len(curve) > 1:
            figures[f"{split}/fig6_auc_vs_size.png"] = size_figure(curve, f"{split}: test AUC vs reference size")
            lines += [f"![Fig. 6]({split}/fig6_auc_vs_size.png)", "", to_markdown(curve), ""]
        if baselines:
            lines += _baseline_section(split, baselines(winner), figures)
    table2 = pd.DataFrame(winners).set_index("split")
    lines[4:4] = ["## Table 2/5: winning combination per split", "", to_markdown(table2), ""]
    for path, fig in figures.items():
        save_figure(fig, out / path)
    report = out / "report.md"
    report.write_text("\n".join(lines) + "\n")
    table2.to_csv(out / "table2_winners.csv")
    with tracker.start_run("grid_report", tags={"grid.report": "1"}) as run:
        for path, fig in figures.items():
            run.log_figure(fig, f"report/{path}")
        run.log_table(table2, "report/table2_winners.csv")
        run.log_text(report.read_text(), "report/report.md")
    log.info("grid report written to %s", report)
    return report
