"""Leave-datasets-out evaluation of label-free accuracy estimators (``experiment=label_free``,
run by :mod:`assessors.tasks.label_free`).

A *unit* is one (LLM row, dataset) pair of a :class:`Results` with a ``confidence`` matrix: its
per-item confidences form one profile and its graded accuracy the target. Prompt variants are
separate LLM rows (e.g. ``smollm2#v0``, ``smollm2#v1``), so each dataset gives K profiles per LLM.
Folds are over datasets (``GroupKFold``), so no variant of a test dataset is ever seen.
"""
from __future__ import annotations

import logging

import numpy as np
import pandas as pd

from assessors.errors import DataError

log = logging.getLogger(__name__)


def units_from_results(results, dataset_column: str = "subgroup", min_items: int = 10):
    """Split a Results with confidences into per-(LLM, dataset) units.

    Returns
    -------
    conf, correct : list of 1-d arrays
    acc : ndarray of shape (n_units,)
    meta : DataFrame with columns ``llm, dataset, n_items``
    """
    if results.confidence is None:
        raise DataError(f"{results.name}: no confidence matrix; label-free estimation needs per-item confidences "
                        "(Results.confidence, or a `confidence` column in a long table)")
    datasets = results.instances[dataset_column].astype(str).to_numpy()
    conf, correct, rows = [], [], []
    for i, llm in enumerate(results.llms):
        for d in np.unique(datasets):
            cols = datasets == d
            c, s = results.confidence[i, cols], results.success[i, cols]
            ok = ~np.isnan(c) & ~np.isnan(s)
            if ok.sum() < min_items:
                continue
            conf.append(c[ok].astype(float))
            correct.append(s[ok].astype(float))
            rows.append((llm, d, int(ok.sum())))
    if not rows:
        raise DataError(f"{results.name}: no (LLM, dataset) unit has {min_items}+ items with confidence and grade")
    meta = pd.DataFrame(rows, columns=["llm", "dataset", "n_items"])
    return conf, correct, np.array([c.mean() for c in correct]), meta


def _plot(pred, acc, oracle, name):
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    ls = sorted(oracle)
    ax1.plot(ls, [oracle[l] for l in ls], "k.-", label="oracle^l")
    for name_, p in pred.items():
        ax1.axhline(np.mean(np.abs(p - acc)), ls="--", lw=1, label=name_, color=f"C{list(pred).index(name_)}")
    ax1.set_xscale("log", base=2)
    ax1.set_xlabel("labelled items l")
    ax1.set_ylabel("MAE of accuracy")
    ax1.legend(fontsize=7)
    for i, (name_, p) in enumerate(pred.items()):
        ax2.scatter(acc, p, s=8, label=name_, color=f"C{i}")
    ax2.plot([0, 1], [0, 1], "k:", lw=1)
    ax2.set_xlabel("true accuracy")
    ax2.set_ylabel("predicted accuracy")
    fig.suptitle(f"Label-free accuracy, leave-datasets-out CV: {name}", fontsize=9)
    fig.tight_layout()
    return fig


def _report(table: pd.DataFrame, name: str, metrics: dict) -> str:
    lines = [f"# Label-free accuracy on {name}", "",
             f"{int(metrics['n_units'])} (LLM/variant, dataset) profiles over {int(metrics['n_datasets'])} datasets, "
             f"{int(metrics['n_folds'])}-fold leave-datasets-out CV. Paper anchor: the meta-model matches "
             "oracle^16 to oracle^128.", "", "| method | MAE | matches oracle^l |", "|---|---|---|"]
    lines += [f"| {r.method} | {r.mae:.4f} | {r.matches_oracle_l} |" for r in table.itertuples()]
    return "\n".join(lines) + "\n"
