"""Per-LLM result tables: long metrics -> wide table, Markdown for artifacts, a console view."""
from __future__ import annotations

import sys
from typing import TextIO

import numpy as np
import pandas as pd
from tabulate import tabulate

from assessors.data.names import check_unique
from assessors.errors import DataError

LONG_COLUMNS = ("llm", "method", "metric", "value")


def per_llm_table(metrics: pd.DataFrame, metric: str | None = None, mean_row: bool = True) -> pd.DataFrame:
    """Pivot a long metrics table to one row per LLM.

    Parameters
    ----------
    metrics : pandas.DataFrame with columns ``llm, method, metric, value``
        One row per (llm, method, metric); duplicates are an error, not averaged.
    metric : str, optional
        Keep only this metric; the result then has one column per method.
        Without it, columns are a (metric, method) MultiIndex.
    mean_row : bool
        Append a ``"mean"`` row (NaN-skipping mean over LLMs).

    Returns
    -------
    pandas.DataFrame of shape (n_llms [+1], n_methods [x n_metrics])
        LLMs and methods in order of first appearance.
    """
    missing = [c for c in LONG_COLUMNS if c not in metrics.columns]
    if missing:
        raise DataError(f"per_llm_table: metrics table lacks columns {missing}; it has {list(metrics.columns)}")
    df = metrics
    if metric is not None:
        df = df[df["metric"] == metric]
        if df.empty:
            raise DataError(f"per_llm_table: no rows with metric {metric!r}; metrics present: {sorted(metrics['metric'].unique())}")
    check_unique(pd.MultiIndex.from_frame(df[["llm", "method", "metric"]]), "per_llm_table",
                 what="(llm, method, metric) row", where=lambda i: f"row {df.index[i]!r}")
    columns = "method" if metric is not None else ["metric", "method"]
    wide = df.pivot(index="llm", columns=columns, values="value").astype(float)
    # pivot sorts labels; restore order of first appearance (e.g. the main method first)
    wide = wide.reindex(index=pd.unique(df["llm"]))
    if metric is not None:
        wide = wide.reindex(columns=pd.unique(df["method"]))
    else:
        order = [(m, k) for m in pd.unique(df["metric"]) for k in pd.unique(df["method"]) if (m, k) in wide.columns]
        wide = wide.reindex(columns=pd.MultiIndex.from_tuples(order, names=["metric", "method"]))
    wide.index.name, wide.columns.name = "llm", (wide.columns.name if metric is None else "method")
    if mean_row:
        wide.loc["mean"] = wide.mean(axis=0, skipna=True)
    return wide


def _flat(df: pd.DataFrame) -> pd.DataFrame:
    if isinstance(df.columns, pd.MultiIndex):
        df = df.copy()
        df.columns = [" / ".join(map(str, c)) for c in df.columns]
    return df


def to_markdown(df: pd.DataFrame, floatfmt: str = ".3f") -> str:
    """GitHub-flavoured Markdown of ``df`` (index included, MultiIndex columns joined by " / ")."""
    return _flat(df).to_markdown(floatfmt=floatfmt, tablefmt="github")


def format_console(df: pd.DataFrame, floatfmt: str = ".3f", best: str | None = "max", title: str | None = None) -> str:
    """Plain-text table for terminals; with ``best`` ("max"/"min") the best value in each row gets a ``*``.

    Parameters
    ----------
    df : pandas.DataFrame of shape (n_rows, n_cols), numeric
    best : {"max", "min", None}
        Which value counts as best in a row (AUC: max; Brier, log loss, ECE: min).
    """
    flat = _flat(df)
    values = flat.to_numpy(dtype=float)
    cells = [[("" if np.isnan(v) else format(v, floatfmt)) for v in row] for row in values]
    if best is not None:
        for i, row in enumerate(values):
            if np.isfinite(row).any():
                j = int(np.nanargmax(row) if best == "max" else np.nanargmin(row))
                cells[i][j] += "*"
    text = tabulate(cells, headers=[str(c) for c in flat.columns], showindex=[str(i) for i in flat.index],
                    tablefmt="simple", stralign="right", disable_numparse=True)
    return f"{title}\n{text}" if title else text


def print_table(df: pd.DataFrame, floatfmt: str = ".3f", best: str | None = "max", title: str | None = None,
                file: TextIO | None = None) -> None:
    """Print :func:`format_console` of ``df`` to ``file`` (default stdout)."""
    print(format_console(df, floatfmt=floatfmt, best=best, title=title), file=file or sys.stdout)
