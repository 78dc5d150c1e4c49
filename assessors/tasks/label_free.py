"""``experiment=label_free``: label-free accuracy estimators, leave-datasets-out
(:mod:`assessors.estimation.label_free.harness`)."""
from __future__ import annotations

import numpy as np
import pandas as pd
from hydra.utils import instantiate
from sklearn.model_selection import GroupKFold

from assessors.errors import ConfigError
from assessors.estimation.label_free import harness
from assessors.estimation.label_free.latent_feature import align_source, unit_features
from assessors.estimation.label_free.oracle import matched_oracle, oracle_mae
from assessors.tasks.wrapper import task_wrapper


def _latent_model(lf, results):
    """The fitted latent-feature model of ``label_free.latent`` (None when not configured)."""
    spec = lf.get("latent")
    if not spec:
        return None
    source = instantiate(spec.source)
    return instantiate(spec.model).fit(align_source(source, results.instance_ids))


def execute(cfg, run) -> dict:
    """Leave-datasets-out CV of every configured method; MAE against the oracle^l curve."""
    lf = cfg.label_free
    results = instantiate(lf.simulate) if lf.get("simulate") else instantiate(cfg.data)
    conf, correct, acc, meta = harness.units_from_results(results, lf.get("dataset_column", "subgroup"),
                                                          int(lf.get("min_items", 10)))
    groups = meta["dataset"].to_numpy()
    n_ds = len(np.unique(groups))
    n_folds = min(int(lf.n_folds), n_ds)
    if n_folds < 2:
        raise ConfigError(f"leave-datasets-out CV needs 2+ datasets, found {n_ds}")
    methods = {name: spec for name, spec in lf.methods.items()}
    pred = {name: np.full(len(acc), np.nan) for name in methods}
    latent = _latent_model(lf, results)
    extra = np.full(len(acc), np.nan)  # the latent feature of each unit as the test fold saw it
    for tr, te in GroupKFold(n_splits=n_folds).split(acc, groups=groups):
        x_tr = x_te = None
        if latent is not None:
            # training units see the other training datasets, test units all of them: no unit sees its own labels
            rows, item_ds = results.llm_index(list(meta["llm"])), results.instances[lf.get("dataset_column", "subgroup")]
            item_ds, seen = item_ds.astype(str).to_numpy(), set(groups[tr])
            x_tr = unit_features(latent, results.success, rows[tr], groups[tr], item_ds, seen)[:, None]
            x_te = unit_features(latent, results.success, rows[te], groups[te], item_ds, seen)[:, None]
            extra[te] = x_te[:, 0]
        for name, spec in methods.items():
            est = instantiate(spec).fit([conf[i] for i in tr], acc[tr], [correct[i] for i in tr], x_tr)
            pred[name][te] = est.predict([conf[i] for i in te], x_te)
    oracle = oracle_mae(correct, list(lf.oracle_ls), n_draws=int(lf.get("oracle_draws", 200)),
                        seed=int(cfg.get("seed", 0)))
    metrics = {"n_units": float(len(acc)), "n_datasets": float(n_ds), "n_folds": float(n_folds)}
    table = _mae_table(pred, acc, oracle, metrics)
    metrics["mae_best"] = min(metrics[f"mae_{n}"] for n in pred)  # the best method's MAE
    run.log_metrics(metrics)
    run.log_table(table, "tables/label_free_mae.csv")
    if latent is not None:
        metrics["latent_feature_coverage"] = float(np.isfinite(extra).mean())  # share of units it describes
    run.log_table(meta.assign(accuracy=acc, latent_feature=extra, **{f"pred_{k}": v for k, v in pred.items()}),
                  "tables/label_free_predictions.csv")
    run.log_figure(harness._plot(pred, acc, oracle, results.name), "plots/label_free.png")
    run.log_text(harness._report(table, results.name, metrics), "report.md")
    return metrics


def _mae_table(pred: dict, acc: np.ndarray, oracle: dict, metrics: dict) -> pd.DataFrame:
    """Each method's and each oracle^l's MAE (a table); adds ``mae_*`` and ``oracle_match_*`` to ``metrics``."""
    rows = []
    for name, p in pred.items():
        mae = float(np.mean(np.abs(p - acc)))
        metrics[f"mae_{name}"] = mae
        metrics[f"oracle_match_{name}"] = float(matched_oracle(mae, oracle))
        rows.append({"method": name, "mae": mae, "matches_oracle_l": matched_oracle(mae, oracle)})
    for l, m in oracle.items():
        metrics[f"mae_oracle_{l}"] = m
        rows.append({"method": f"oracle^{l}", "mae": m, "matches_oracle_l": l})
    return pd.DataFrame(rows)


run = task_wrapper("label_free")(execute)
