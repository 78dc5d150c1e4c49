"""Leave-datasets-out evaluation of label-free accuracy estimators (``experiment=label_free``).

A *unit* is one (LLM row, dataset) pair of a :class:`Results` with a ``confidence`` matrix: its
per-item confidences form one profile and its graded accuracy the target. Prompt variants are
separate LLM rows (e.g. ``smollm2#v0``, ``smollm2#v1``), so each dataset gives K profiles per LLM.
Folds are over datasets (``GroupKFold``), so no variant of a test dataset is ever seen.
"""
from __future__ import annotations

import logging

import numpy as np
import pandas as pd
from sklearn.model_selection import GroupKFold

from assessors.errors import ConfigError, DataError
from assessors.estimation.label_free.oracle import matched_oracle, oracle_mae

log = logging.getLogger(__name__)


def run(cfg) -> dict:
    """Hydra task: ``hydra.utils.instantiate(cfg.task)(cfg)``; logs to the configured tracker."""
    from assessors.tracking import tracker_from_cfg

    with tracker_from_cfg(cfg).start_run(cfg.get("run_name", "label_free"), cfg) as run_:
        return _run(cfg, run_)


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


def _run(cfg, run) -> dict:
    from hydra.utils import instantiate

    lf = cfg.label_free
    results = instantiate(lf.simulate) if lf.get("simulate") else instantiate(cfg.data)
    conf, correct, acc, meta = units_from_results(results, lf.get("dataset_column", "subgroup"),
                                                  int(lf.get("min_items", 10)))
    groups = meta["dataset"].to_numpy()
    n_ds = len(np.unique(groups))
    n_folds = min(int(lf.n_folds), n_ds)
    if n_folds < 2:
        raise ConfigError(f"leave-datasets-out CV needs 2+ datasets, found {n_ds}")
    methods = {name: spec for name, spec in lf.methods.items()}
    pred = {name: np.full(len(acc), np.nan) for name in methods}
    for tr, te in GroupKFold(n_splits=n_folds).split(acc, groups=groups):
        for name, spec in methods.items():
            est = instantiate(spec).fit([conf[i] for i in tr], acc[tr], [correct[i] for i in tr])
            pred[name][te] = est.predict([conf[i] for i in te])
    oracle = oracle_mae(correct, list(lf.oracle_ls), n_draws=int(lf.get("oracle_draws", 200)),
                        seed=int(cfg.get("seed", 0)))
    metrics = {"n_units": float(len(acc)), "n_datasets": float(n_ds), "n_folds": float(n_folds)}
    rows = []
    for name, p in pred.items():
        mae = float(np.mean(np.abs(p - acc)))
        metrics[f"mae_{name}"] = mae
        metrics[f"oracle_match_{name}"] = float(matched_oracle(mae, oracle))
        rows.append({"method": name, "mae": mae, "matches_oracle_l": matched_oracle(mae, oracle)})
    for l, m in oracle.items():
        metrics[f"mae_oracle_{l}"] = m
        rows.append({"method": f"oracle^{l}", "mae": m, "matches_oracle_l": l})
    table = pd.DataFrame(rows)
    metrics["objective"] = min(metrics[f"mae_{n}"] for n in pred)  # best method's MAE, for sweepers
    run.log_metrics(metrics)
    run.log_table(table, "tables/label_free_mae.csv")
    run.log_table(meta.assign(accuracy=acc, **{f"pred_{k}": v for k, v in pred.items()}),
                  "tables/label_free_predictions.csv")
    run.log_figure(_plot(pred, acc, oracle, results.name), "plots/label_free.png")
    run.log_text(_report(table, results.name, metrics), "report.md")
    return metrics


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
