"""``experiment=routerbench``: routing on RouterBench with real per-item costs (:mod:`assessors.routing.evaluate`).

Train on the RouterBench train CSVs (a ``routing_eval.val_fraction`` of them for validation),
evaluate on the test CSVs; the in-distribution setting and one onboarding setting per held-out LLM.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pandas as pd
from hydra.utils import instantiate
from omegaconf import DictConfig

from assessors.features.parts import featurize_parts
from assessors.routing.evaluate import (aiq, evaluate_setting, fit_cost_models, plot_curves, predict_all,
                                        reference_points)
from assessors.tasks.wrapper import task_wrapper
from assessors.threads import budgeted, fit_threads

log = logging.getLogger(__name__)


def _split_ids(res, val_fraction: float, seed: int) -> tuple[dict[str, list[str]], list[str]]:
    """``fit``/``val`` ids (a random share of the train CSVs) and ``test`` ids (the test CSVs); and
    the train CSVs' ids in data order."""
    split = res.instances["routerbench_split"].to_numpy()
    train_ids = list(res.instances.index[split == "train"])
    perm = np.random.default_rng(seed).permutation(len(train_ids))
    n_val = int(round(val_fraction * len(train_ids)))
    return {"fit": [train_ids[i] for i in perm[n_val:]], "val": [train_ids[i] for i in perm[:n_val]],
            "test": list(res.instances.index[split == "test"])}, train_ids


def _settings(cfg, X, S, C_est, C_true, llms, ref_index, points):
    """Evaluate every setting: (table per setting, curves per setting, figure per setting)."""
    singles = points[points["kind"] == "single LLM"]
    best = singles.loc[singles["accuracy"].idxmax()]
    c_range = (float(singles["cost"].min()), float(singles["cost"].max()))
    assessor = instantiate(budgeted(cfg.assessor, fit_threads(threads=cfg.get("threads"))))
    knn, mf, router = instantiate(cfg.baselines.knn), instantiate(cfg.baselines.mf), instantiate(cfg.router)
    tables, curves_by, figs = [], {}, {}
    holdouts = [("in-distribution", None)] + [(f"onboarding:{h}", llms.index(h)) for h in cfg.routing_eval.onboarding_holdout]
    for label, holdout in holdouts:
        log.info("routing evaluation: %s", label)
        preds = predict_all(assessor, knn, mf, X, S["fit"], S["val"], ref_index, holdout,
                            seen_llms=cfg.routing_eval.seen_llms)
        table, curves = evaluate_setting(router, preds, S, C_est, C_true, float(best["accuracy"]), float(best["cost"]),
                                         c_range, label, accuracy_fraction=cfg.goal.accuracy_fraction,
                                         cost_fraction=cfg.goal.cost_fraction)
        tables.append(table)
        curves_by[label] = curves
        figs[label] = plot_curves(curves, points, f"RouterBench test ({S['test'].shape[1]} prompts): {label}")
    return pd.concat(tables, ignore_index=True), curves_by, figs, best, c_range


def _write(out_dir: str, out: dict, table: pd.DataFrame, figs: dict) -> None:
    o = Path(out_dir)
    o.mkdir(parents=True, exist_ok=True)
    (o / "summary.json").write_text(json.dumps(out, indent=2, default=float))
    table.to_csv(o / "routerbench_table.csv", index=False)
    for label, fig in figs.items():
        fig.savefig(o / f"cost_accuracy_{label.replace(':', '_').replace('/', '_')}.png", dpi=120)


@task_wrapper("routerbench")
def run(cfg: DictConfig, run) -> dict:
    """The routing evaluation task; logs tables, curves and the figure; returns summary metrics."""
    res = instantiate(cfg.data)
    ids, train_ids = _split_ids(res, cfg.routing_eval.val_fraction, cfg.seed)
    llms = list(res.llms)
    featurizer = instantiate(budgeted(cfg.features, fit_threads(threads=cfg.get("threads"))))
    X = featurize_parts(featurizer, res, ids, "fit")
    S = {p: res.matrix(llms, v) for p, v in ids.items()}
    C_true = {p: np.nan_to_num(res.cost[:, res.instance_index(v)]) for p, v in ids.items()}
    cost_models = fit_cost_models(res.prompts(train_ids), res.cost[:, res.instance_index(train_ids)])
    C_est = {p: np.stack([cm.expected(res.prompts(v)) for cm in cost_models]) for p, v in ids.items()}
    selector = instantiate(cfg.selector).fit(S["fit"], ids["fit"], X["fit"])
    ref_index = np.asarray(selector.reference_index_)
    points = reference_points(S["test"], C_true["test"], llms, cfg.seed)
    table, curves_by, figs, best, c_range = _settings(cfg, X, S, C_est, C_true, llms, ref_index, points)
    for label, curves in curves_by.items():
        for name, cv in curves.items():
            run.log_table(cv.assign(method=name, setting=label), f"routing/curves/{label}/{name}.csv".replace(":", "_"))
    ref_rows = points.assign(setting="reference", aiq=[aiq(np.array([c]), np.array([a]), *c_range)
                                                       for c, a in zip(points["cost"], points["accuracy"])])
    run.log_table(table, "routing/routerbench_table.csv")
    run.log_table(ref_rows, "routing/reference_points.csv")
    for label, fig in figs.items():
        run.log_figure(fig, f"routing/cost_accuracy_{label.replace(':', '_').replace('/', '_')}.png")
    summary = {"best_llm": best["method"], "best_llm_accuracy": float(best["accuracy"]),
               "best_llm_cost": float(best["cost"]), "n_test": len(ids["test"]), "n_reference": int(len(ref_index))}
    for _, r in table.iterrows():
        key = f"{r['setting']}/{r['method']}".replace(" ", "_")
        summary[f"{key}/aiq"] = r["aiq"]
        summary[f"{key}/cost_ratio"] = r["cost_ratio_to_best_llm"]
    run.log_metrics({k: v for k, v in summary.items() if isinstance(v, float)})
    out = {"table": table.to_dict(orient="records"), "reference_points": ref_rows.to_dict(orient="records"), **summary}
    run.log_dict(out, "routing/summary.json")
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(table.to_string(index=False))
        print(ref_rows[["method", "accuracy", "cost", "aiq"]].to_string(index=False))
    if cfg.routing_eval.get("out"):
        _write(cfg.routing_eval.out, out, table, figs)
    log.info("results: %s", run.location)
    return out
