"""Routing evaluation on RouterBench (``python train.py experiment=routerbench``, run by
:mod:`assessors.tasks.routerbench`).

Train on the RouterBench train CSVs, evaluate on the test CSVs with the real per-item costs of
the 11 LLMs. Every method predicts P(success) per (LLM, test prompt); the same utility router
(P - lambda * expected cost) is swept over lambda to give an accuracy-vs-total-cost curve.
Compared: the generic assessor, kNN on prompt embeddings, RouteLLM-style matrix factorisation,
every single LLM, the oracle and random routing; "onboarding" repeats the comparison with one
LLM held out of training that enters only through its reference results.

AIQ (RouterBench, Hu et al. 2024): the area under the non-decreasing upper convex hull of a
method's (cost, accuracy) points, divided by the cost range of the pool, with the cost range
set by the cheapest and the most expensive single LLM (the same bounds for every method; the
hull is extended flat outside a method's own points).
"""
from __future__ import annotations

import logging
import time

import numpy as np
import pandas as pd
from scipy.optimize import nnls
from sklearn.base import clone

from assessors.routing.base import realised
from assessors.routing.costs import CostModel
from assessors.errors import NoPosteriorError
from assessors.trust.posterior_policy import PosteriorTrustPolicy

log = logging.getLogger(__name__)


# ------------------------------------------------------------------------ curve maths
def upper_hull(cost: np.ndarray, acc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vertices of the non-decreasing upper convex hull of points (cost, acc), by cost."""
    order = np.lexsort((-np.asarray(acc), np.asarray(cost)))
    pts = [(float(cost[i]), float(acc[i])) for i in order]
    hull: list[tuple[float, float]] = []
    for p in pts:
        if hull and p[1] <= hull[-1][1]:
            continue  # non-decreasing: a costlier point must be more accurate to count
        while len(hull) >= 2:
            (x1, y1), (x2, y2) = hull[-2], hull[-1]
            if (x2 - x1) * (p[1] - y1) - (y2 - y1) * (p[0] - x1) >= 0:  # hull[-1] under the chord
                hull.pop()
            else:
                break
        hull.append(p)
    h = np.array(hull)
    return h[:, 0], h[:, 1]


def aiq(cost: np.ndarray, acc: np.ndarray, c_min: float, c_max: float, n: int = 2001) -> float:
    """Average accuracy of the hull over [c_min, c_max] (costs on a linear scale)."""
    hx, hy = upper_hull(cost, acc)
    grid = np.linspace(c_min, c_max, n)
    return float(np.trapezoid(np.interp(grid, hx, hy), grid) / (c_max - c_min))


def cost_to_reach(curve: pd.DataFrame, target: float) -> float:
    """Least total cost among sweep points whose accuracy reaches ``target`` (NaN if none)."""
    ok = curve[curve["accuracy"] >= target]
    return float(ok["cost"].min()) if len(ok) else float("nan")


def fit_cost_models(prompts: list[str], cost: np.ndarray, chars_per_token: float = 4.0) -> list[CostModel]:
    """Per-LLM ``per_item + per_1k_input * tokens`` fitted by non-negative least squares on training costs."""
    n_tok = np.array([len(p) for p in prompts], float) / chars_per_token
    out = []
    for c in cost:
        ok = np.isfinite(c)
        A = np.column_stack([np.ones(ok.sum()), n_tok[ok] / 1000.0])
        (a, b), _ = nnls(A, c[ok].astype(float))
        out.append(CostModel(per_item=a, per_1k_input=b, chars_per_token=chars_per_token))
    return out


# ------------------------------------------------------------------------- methods
def _generic(assessor, X_fit, S_fit, X_val, S_val, ref_index):
    """A fresh clone of ``assessor`` fitted on the fit prompts, validated on the val prompts."""
    gen = clone(assessor)
    R = S_fit[:, ref_index]
    # GenericAssessor's validation AUC does not accept NaN outcomes: keep fully graded prompts
    full = np.isfinite(S_val).all(0)
    gen.fit(X_fit, S_fit, ref_index, validation=(X_val[full], S_val[:, full], R))
    return gen


def _served_new_llm(gen, X_ref, r, X_target):
    """The held-out LLM as a served model scores it, a callable X -> P (m,): with a posterior, its posterior
    trust report (stated defaults) about ``X_target`` (features only, as ``predict.py mode=route`` reports
    about the prompts it is given) and the fallback its verdict asks for; else the assessor from its
    reference answers."""
    state = gen.describe_reference(np.asarray(r)[None, :])[0]
    own = lambda X_: gen.predict_state(X_, state)[0]  # noqa: E731
    try:
        gen.require_posterior("the held-out LLM's posterior trust report")
    except NoPosteriorError:
        return own
    report, predictor = PosteriorTrustPolicy().assess(gen, X_ref, r, X_target, llm="held out")
    log.info("held-out LLM: trust verdict %r, served by %s", report["verdict"], report["fallback"]["predictor"])
    return predictor if predictor is not None else own


def _predictions(gen, X: dict, S_fit, seen: list[int], holdout: int | None, ref_index, seen_llms: str) -> dict:
    """P(success) on val and test (n_llms, m). ``seen_llms="all_answers"``: each seen LLM described by all
    its answers on the fit prompts, the held-out one by its reference answers as served (its trust verdict
    may switch it to a fallback); ``"reference"`` (the paper's protocol): every LLM by its reference answers."""
    if seen_llms == "reference":
        states = gen.describe_reference(S_fit[:, ref_index])  # the held-out row included
        return {p: gen.predict_states(X[p], states)[0] for p in ("val", "test")}
    states = gen.describe_known(X["fit"], S_fit[seen], ref_index)
    new = None if holdout is None else _served_new_llm(gen, X["fit"][ref_index], S_fit[holdout, ref_index], X["test"])
    out = {}
    for p in ("val", "test"):
        P = gen.predict_states(X[p], states)[0]
        if new is not None:
            P = np.insert(P, holdout, new(X[p]), axis=0)
        out[p] = P
    return out


def predict_all(assessor, knn, mf, X: dict, S_fit, S_val, ref_index, holdout: int | None,
                seen_llms: str = "all_answers"):
    """P(success) on val and test (n_llms, m) per method; ``holdout`` LLM row enters by its reference results only.

    ``assessor`` (the generic assessor), ``knn`` and ``mf`` (the baselines) are unfitted estimators,
    cloned for each fit; ``X`` holds the ``fit``/``val``/``test`` features. ``seen_llms``: how the
    assessor describes the LLMs it was trained on (``describe_known``). ``all_answers``: by all their
    answers on the fit prompts, as kNN and matrix factorisation do (the paper's generic assessor still
    reads only their reference answers); ``reference`` (the paper's protocol): by their reference results.
    """
    if seen_llms not in ("all_answers", "reference"):
        raise ValueError(f"seen_llms must be 'all_answers' or 'reference', got {seen_llms!r}")
    k = S_fit.shape[0]
    seen = [i for i in range(k) if i != holdout]
    preds = {}
    t0 = time.perf_counter()
    gen = _generic(assessor, X["fit"], S_fit[seen], X["val"], S_val[seen], ref_index)
    preds["generic assessor"] = _predictions(gen, X, S_fit, seen, holdout, ref_index, seen_llms)
    log.info("generic assessor fitted in %.1fs (classifier %s)", time.perf_counter() - t0, gen.classifier_name_)
    X_ref = X["fit"][ref_index]
    knn_proto = knn
    knn = clone(knn_proto).fit(X["fit"], S_fit[seen])
    mf = clone(mf).fit(X["fit"], S_fit[seen])
    if holdout is not None:
        knn_new = clone(knn_proto).fit(X_ref, S_fit[[holdout]][:, ref_index])
        mf.add_llm(X_ref, S_fit[holdout, ref_index])
    for name, model in (("kNN", knn), ("matrix factorisation", mf)):
        out = {}
        for p in ("val", "test"):
            P = model.predict_success(X[p])
            if holdout is not None:
                new = (knn_new.predict_success(X[p]) if model is knn else P[-1:])
                P = np.insert(P[:len(seen)], holdout, new[0], axis=0)
            out[p] = P
        preds[name] = out
    return preds


def evaluate_setting(router, preds, S, C_est, C_true, best_acc, best_cost, c_range, label,
                     accuracy_fraction: float = 0.95, cost_fraction: float = 0.4):
    """Curves, AIQ, goal figures and a calibrated operating point for every method.

    ``router`` is unfitted (cloned for the sweep and for each calibration); the goal is
    ``accuracy_fraction`` of the best single LLM's accuracy at ``cost_fraction`` of its cost.
    """
    proto, router = router, clone(router)
    rows, curves = [], {}
    for name, P in preds.items():
        curve = router.sweep(P["test"], S["test"], C_est["test"], C_true=C_true["test"])
        curves[name] = curve
        need = cost_to_reach(curve, accuracy_fraction * best_acc)
        row = {"setting": label, "method": name, "aiq": aiq(curve["cost"].to_numpy(), curve["accuracy"].to_numpy(), *c_range),
               "max_accuracy": float(curve["accuracy"].max()),
               f"cost_at_{accuracy_fraction:g}x_best_acc": need,
               "cost_ratio_to_best_llm": need / best_cost}
        row["meets_goal"] = bool(row["cost_ratio_to_best_llm"] <= cost_fraction)
        # a deployable operating point: lambda calibrated on validation prompts only
        val_target = accuracy_fraction * float(np.nanmax(np.nanmean(np.nan_to_num(S["val"]), axis=1)))
        try:
            r = clone(proto).calibrate(P["val"], S["val"], C_est["val"], target_accuracy=val_target,
                                                  C_true=C_true["val"])
            y, c = realised(r.route(P["test"], C_est["test"]).choice, np.nan_to_num(S["test"]), C_true["test"])
            row.update(calibrated_knob=r.knob_value, calibrated_test_accuracy=float(np.mean(y)),
                       calibrated_test_cost=float(c.sum()))
        except Exception as e:  # noqa: BLE001 - a target out of reach is a result, not a crash
            row.update(calibrated_knob=np.nan, calibrated_test_accuracy=np.nan, calibrated_test_cost=np.nan)
            log.warning("%s/%s: calibration failed: %s", label, name, e)
        rows.append(row)
    return pd.DataFrame(rows), curves


def reference_points(S_test, C_true, llms, seed: int = 0) -> pd.DataFrame:
    """Single LLMs, the oracle and random routing on the test prompts."""
    S0 = np.nan_to_num(S_test)
    rows = [{"method": n, "kind": "single LLM", "accuracy": float(S0[i].mean()), "cost": float(C_true[i].sum())}
            for i, n in enumerate(llms)]
    # oracle: the cheapest LLM that succeeds; the cheapest overall when none does
    big = np.where(S0 > 0, C_true, np.inf)
    choice = np.where(np.isfinite(big.min(0)), big.argmin(0), C_true.argmin(0))
    y, c = realised(choice, S0, C_true)
    rows.append({"method": "oracle", "kind": "oracle", "accuracy": float(y.mean()), "cost": float(c.sum())})
    rng = np.random.default_rng(seed)
    draws = [realised(rng.integers(0, len(llms), S0.shape[1]), S0, C_true) for _ in range(200)]
    rows.append({"method": "random", "kind": "random", "accuracy": float(np.mean([d[0].mean() for d in draws])),
                 "cost": float(np.mean([d[1].sum() for d in draws]))})
    return pd.DataFrame(rows)


def plot_curves(curves: dict, points: pd.DataFrame, title: str):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 5))
    for name, cv in curves.items():
        hx, hy = upper_hull(cv["cost"].to_numpy(), cv["accuracy"].to_numpy())
        line, = ax.plot(hx, hy, label=f"{name} (hull)")
        ax.scatter(cv["cost"], cv["accuracy"], s=4, color=line.get_color(), alpha=0.4)
    for kind, marker in (("single LLM", "o"), ("oracle", "*"), ("random", "x")):
        sub = points[points["kind"] == kind]
        ax.scatter(sub["cost"], sub["accuracy"], marker=marker, color="k", s=40 if kind != "oracle" else 120,
                   label=kind, zorder=3)
        if kind == "single LLM":
            for _, r in sub.iterrows():
                ax.annotate(r["method"].split("/")[-1][:18], (r["cost"], r["accuracy"]), fontsize=6,
                            xytext=(3, -3), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_xlabel("total cost on the test prompts (USD, log scale)")
    ax.set_ylabel("accuracy")
    ax.set_title(title)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig
