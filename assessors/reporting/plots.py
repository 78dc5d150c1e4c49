"""Figures for a run: AUC by method per LLM (the paper's Fig. 4), ROC curves, reliability diagrams.

Figures are built on :class:`matplotlib.figure.Figure` directly, without pyplot: no GUI
backend, no global figure registry to leak memory in long sweeps. Rendering uses Agg.
Every function returns the Figure; :func:`save_figure` writes it atomically.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.figure import Figure
from sklearn.metrics import roc_curve

from assessors.errors import DataError
from assessors.io import atomic_open
from assessors.metrics import auc, calibration_bins, drop_unevaluated, ece


def _colors(n: int) -> list:
    cmap = colormaps["tab10" if n <= 10 else "tab20"]
    return [cmap(i % cmap.N) for i in range(n)]


def auc_by_method_bar(table: pd.DataFrame, main: str | None = None, title: str = "Test AUC per LLM", metric: str = "AUC") -> Figure:
    """Grouped bars of a metric per test LLM, one bar per method (the paper's Fig. 4).

    Parameters
    ----------
    table : pandas.DataFrame of shape (n_llms, n_methods)
        Rows are test LLMs (index = names), columns methods, values e.g. AUC. NaN bars are left empty.
    main : str, optional
        Method whose value sorts the LLMs (descending); default the first column.
    title, metric : str
        Figure title and y-axis label.

    Returns
    -------
    matplotlib.figure.Figure
        Dashed lines mark each method's mean over LLMs; the legend gives the means.
    """
    if table.empty:
        raise DataError("auc_by_method_bar: the table is empty (no test LLMs or no methods)")
    main = table.columns[0] if main is None else main
    if main not in table.columns:
        raise DataError(f"auc_by_method_bar: main method {main!r} is not a column; columns are {list(table.columns)}")
    table = table.astype(float).sort_values(main, ascending=False)
    n_llms, n_methods = table.shape
    fig = Figure(figsize=(min(16.0, max(6.5, 0.16 * n_llms * n_methods + 2.0)), 5.4), layout="constrained")
    ax = fig.add_subplot()
    x = np.arange(n_llms)
    width = 0.82 / n_methods
    for k, (method, color) in enumerate(zip(table.columns, _colors(n_methods))):
        vals = table[method].to_numpy()
        mean = np.nanmean(vals) if np.isfinite(vals).any() else np.nan
        ax.bar(x + (k - (n_methods - 1) / 2) * width, vals, width, color=color, label=f"{method} (mean {mean:.3f})",
               edgecolor="white", linewidth=0.4)
        if np.isfinite(mean):  # the method's mean over LLMs, in its colour
            ax.axhline(mean, color=color, linestyle="--", linewidth=1.0, alpha=0.8)
    finite = table.to_numpy()[np.isfinite(table.to_numpy())]
    lo = min(0.5, finite.min()) if finite.size else 0.0
    hi = finite.max() if finite.size else 1.0
    ax.set_ylim(max(0.0, lo - 0.03), min(1.0, hi + 0.03) if hi <= 1 else hi * 1.05)
    if metric.upper() == "AUC" and lo <= 0.5:
        ax.axhline(0.5, color="0.3", linewidth=0.9, linestyle=":", zorder=0, label="chance (0.5)")
    ax.set_xticks(x, [str(i) for i in table.index], rotation=40, ha="right", rotation_mode="anchor", fontsize=8.5)
    ax.set_xlim(-0.6, n_llms - 0.4)
    ax.set_ylabel(metric)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    ax.spines[["top", "right"]].set_visible(False)
    # legend between title and axes: never covers bars, whatever the values
    ax.legend(fontsize=8.5, ncols=min(n_methods + 1, 5), loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False)
    fig.suptitle(f"{title} (sorted by {main}; dashed lines: means)", fontsize=11)
    return fig


def roc_curves(curves: dict[str, tuple], title: str = "ROC curves (pooled over test LLMs)") -> Figure:
    """ROC curve per method, on predictions pooled over all test LLMs.

    Pooling is a deliberate choice: one panel stays readable with any number of LLMs, and a
    pooled curve also credits an assessor for ranking *across* LLMs (what a router needs).
    Per-LLM discrimination is in the AUC bar chart. The legend's AUC is the pooled AUC,
    which is not the mean of per-LLM AUCs.

    Parameters
    ----------
    curves : dict of method -> (y, p)
        ``y`` outcomes and ``p`` predicted probabilities, arrays of shape (n,) concatenated
        over LLMs; NaN outcomes are dropped.
    """
    if not curves:
        raise DataError("roc_curves: no methods given")
    fig = Figure(figsize=(5.6, 5.2), layout="constrained")
    ax = fig.add_subplot()
    for (method, (y, p)), color in zip(curves.items(), _colors(len(curves))):
        y, p = drop_unevaluated(y, p)
        if len(np.unique(y)) < 2:
            ax.plot([], [], color=color, label=f"{method} (one class only: no curve)")
            continue
        fpr, tpr, _ = roc_curve(y, p)
        ax.plot(fpr, tpr, color=color, linewidth=1.6, label=f"{method} (AUC {auc(y, p):.3f}, n={len(y):,})")
    ax.plot([0, 1], [0, 1], color="0.5", linestyle=":", linewidth=1, label="chance")
    ax.set(xlim=(0, 1), ylim=(0, 1.005), xlabel="False positive rate", ylabel="True positive rate", title=title)
    ax.set_aspect("equal")
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8.5)
    return fig


def reliability_diagram(curves: dict[str, tuple], n_bins: int = 10, title: str = "Reliability (pooled over test LLMs)") -> Figure:
    """Observed success rate against mean predicted probability, per method, with bin counts.

    Top: one line per method over the non-empty equal-width bins of
    :func:`assessors.metrics.calibration_bins` (marker area grows with the bin count), the
    diagonal is perfect calibration, the legend gives the ECE. Bottom: how many predictions
    fall in each bin, per method.

    Parameters
    ----------
    curves : dict of method -> (y, p)
        Arrays of shape (n,); NaN outcomes are dropped.
    n_bins : int
    """
    if not curves:
        raise DataError("reliability_diagram: no methods given")
    fig = Figure(figsize=(6.0, 6.8), layout="constrained")
    top, bottom = fig.subplots(2, 1, height_ratios=[3, 1.2], sharex=True)
    colors = _colors(len(curves))
    width = 1.0 / n_bins * 0.85 / len(curves)
    for k, ((method, (y, p)), color) in enumerate(zip(curves.items(), colors)):
        y, p = drop_unevaluated(y, p)
        bins = calibration_bins(y, p, n_bins)
        full = bins[bins["count"] > 0]
        share = full["count"] / max(1, bins["count"].sum())
        top.plot(full["mean_p"], full["frac_pos"], color=color, linewidth=1.4, label=f"{method} (ECE {ece(y, p, n_bins):.3f})")
        top.scatter(full["mean_p"], full["frac_pos"], s=15 + 250 * share, color=color, alpha=0.8, edgecolor="white", zorder=3)
        centres = (bins["lower"] + bins["upper"]) / 2
        offset = (k - (len(curves) - 1) / 2) * width
        bottom.bar(centres + offset, bins["count"], width, color=color)
    top.plot([0, 1], [0, 1], color="0.5", linestyle=":", linewidth=1, label="perfect calibration")
    top.set(xlim=(0, 1), ylim=(-0.02, 1.02), ylabel="Observed success rate", title=title)
    top.grid(alpha=0.3)
    top.legend(loc="upper left", fontsize=8.5)
    bottom.set(xlabel="Predicted probability of success", ylabel="Count per bin")
    bottom.set_xticks(np.linspace(0, 1, n_bins + 1) if n_bins <= 20 else np.linspace(0, 1, 11))
    bottom.grid(axis="y", alpha=0.3)
    return fig


def save_figure(fig: Figure, path: str | os.PathLike, dpi: int = 150) -> Path:
    """Write ``fig`` to ``path`` atomically (:func:`assessors.io.atomic_open`).

    The format follows the extension (.png, .pdf, .svg). Parent folders are created.
    Returns the final path.
    """
    path = Path(path)
    fmt = path.suffix.lstrip(".").lower() or "png"
    with atomic_open(path) as fh:
        fig.savefig(fh, format=fmt, dpi=dpi, bbox_inches="tight")
    return path
