"""MDAD meta-evaluation of micro-benchmarks (Yauney et al. 2025, "How reliable is LM micro-benchmarking?").

Agreement = probability that a micro-benchmark ranks a pair of LLMs the same way as the full
benchmark, as a function of the pair's full-benchmark accuracy difference (buckets). MDAD (minimum
detectable ability difference) = the smallest bucket centroid whose agreement reaches 0.8.

``python train.py experiment=mdad`` (:mod:`assessors.tasks.mdad`) compares, per size, the ranking by the raw
micro-benchmark mean with rankings by estimators (e.g. AIPW) fitted on source LLMs; pairs are
formed among target LLMs (a random half of the LLMs per trial).
"""
from __future__ import annotations

import logging

import numpy as np
import pandas as pd

log = logging.getLogger(__name__)


def pair_agreement(full_acc: np.ndarray, est_acc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-pair |full difference| (points) and agreement (1 same order, 0 flipped, 0.5 tie in estimate).

    Parameters
    ----------
    full_acc : ndarray of shape (k,)
    est_acc : ndarray of shape (k,)
    """
    i, j = np.triu_indices(full_acc.size, 1)
    d_full = full_acc[i] - full_acc[j]
    d_est = est_acc[i] - est_acc[j]
    keep = d_full != 0
    agree = np.where(d_est == 0, 0.5, (np.sign(d_full) == np.sign(d_est)).astype(float))
    return np.abs(d_full[keep]) * 100, agree[keep]


def agreement_curve(diffs: list[np.ndarray], agrees: list[np.ndarray], edges: np.ndarray,
                    n_boot: int = 200, seed: int = 0, alpha: float = 0.05) -> pd.DataFrame:
    """Agreement per bucket pooled over trials, with percentile bootstrap CIs over trials.

    Parameters
    ----------
    diffs, agrees : lists (one entry per trial) of arrays from :func:`pair_agreement`
    edges : ndarray of bucket edges in accuracy points
    """
    nb = len(edges) - 1
    sums = np.zeros((len(diffs), nb))
    cnts = np.zeros((len(diffs), nb))
    for t, (d, a) in enumerate(zip(diffs, agrees)):
        b = np.digitize(d, edges) - 1
        ok = (b >= 0) & (b < nb)
        np.add.at(sums[t], b[ok], a[ok])
        np.add.at(cnts[t], b[ok], 1)
    with np.errstate(invalid="ignore"):
        agree = sums.sum(0) / cnts.sum(0)
        rng = np.random.default_rng(seed)
        boots = np.empty((n_boot, nb))
        for k in range(n_boot):
            idx = rng.integers(0, len(diffs), len(diffs))
            boots[k] = sums[idx].sum(0) / cnts[idx].sum(0)
    lo, hi = np.nanpercentile(boots, [100 * alpha / 2, 100 * (1 - alpha / 2)], axis=0) if n_boot else (agree, agree)
    return pd.DataFrame({"lo_edge": edges[:-1], "hi_edge": edges[1:], "centroid": (edges[:-1] + edges[1:]) / 2,
                         "agreement": agree, "ci_low": lo, "ci_high": hi, "pairs": cnts.sum(0).astype(int)}), boots


def mdad(centroids: np.ndarray, agreement: np.ndarray, threshold: float = 0.8, min_pairs: np.ndarray | None = None,
         min_count: int = 1) -> float:
    """Smallest bucket centroid with agreement >= ``threshold`` (NaN if none reaches it)."""
    ok = np.asarray(agreement) >= threshold
    if min_pairs is not None:
        ok &= np.asarray(min_pairs) >= min_count
    return float(np.asarray(centroids)[ok].min()) if ok.any() else float("nan")


def mdad_with_ci(curve: pd.DataFrame, boots: np.ndarray, threshold: float = 0.8, alpha: float = 0.05) -> tuple:
    """MDAD and a percentile bootstrap CI (bootstrap replicates over trials)."""
    c = curve["centroid"].to_numpy()
    point = mdad(c, curve["agreement"].to_numpy(), threshold)
    reps = np.array([mdad(c, b, threshold) for b in boots]) if len(boots) else np.array([point])
    reps = reps[np.isfinite(reps)]
    if not reps.size:
        return point, np.nan, np.nan
    return point, float(np.percentile(reps, 100 * alpha / 2)), float(np.percentile(reps, 100 * (1 - alpha / 2)))


def evaluate(S: np.ndarray, estimators: dict, sizes, trials: int, edges: np.ndarray, n_boot: int = 200,
             progress: bool = True, selectors: dict | None = None,
             selector_trials: int | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Agreement curves and MDAD per (selector, method, size); ``raw_mean`` is the micro-benchmark mean.

    Each trial: a random half of the LLMs are sources, the rest targets; a micro-benchmark of
    ``size`` items, drawn at random (selector ``random``) or chosen by a reference selector
    fitted on the sources' results; every estimator ranks the targets from their
    micro-benchmark results.

    Parameters
    ----------
    S : ndarray of shape (n_llms, n_items)
    estimators : dict name -> BenchmarkEstimator (cloned per trial)
    selectors : dict name -> Selector or None, optional
        ``None`` (or the name ``random``) draws the micro-benchmark uniformly. Default: random only.
    selector_trials : int, optional
        Trials for the fitted selectors (they refit per trial, on that trial's sources).
    """
    from sklearn.base import clone
    from tqdm.auto import tqdm

    S = np.asarray(S, dtype=np.float64)
    n, m = S.shape
    acc = np.nanmean(S, 1)
    selectors = dict(selectors or {"random": None})
    curves, summary = [], []
    for size in [s for s in sizes if s < m]:
        for sel_name, sel in selectors.items():
            n_trials = trials if sel is None else int(selector_trials or trials)
            per = {name: ([], []) for name in ["raw_mean", *estimators]}
            for t in tqdm(range(n_trials), desc=f"mdad {sel_name} n={size}", disable=not progress, mininterval=5):
                rng = np.random.default_rng(t)
                perm = rng.permutation(n)
                src, tgt = np.sort(perm[: n // 2]), np.sort(perm[n // 2:])
                core = np.sort(rng.choice(m, size, replace=False))
                if sel is not None:
                    fitted = clone(sel).set_params(size=size, seed=t).fit(S[src].astype(np.float32), [str(i) for i in range(m)])
                    core = np.sort(np.asarray(fitted.reference_index_, dtype=int))
                Y = S[tgt][:, core]
                est_acc = {"raw_mean": np.nanmean(Y, 1)}
                for name, proto in estimators.items():
                    e = clone(proto).set_params(core_size=size, seed=t).fit(S[src], core_index=core)
                    est_acc[name] = e.estimate(Y).point
                for name, ea in est_acc.items():
                    d, a = pair_agreement(acc[tgt], ea)
                    per[name][0].append(d)
                    per[name][1].append(a)
            for name, (d, a) in per.items():
                curve, boots = agreement_curve(d, a, edges, n_boot=n_boot, seed=size)
                point, lo, hi = mdad_with_ci(curve, boots)
                curves.append(curve.assign(selector=sel_name, method=name, size=size))
                summary.append((sel_name, name, size, n_trials, point, lo, hi))
    return (pd.concat(curves, ignore_index=True),
            pd.DataFrame(summary, columns=["selector", "method", "size", "trials", "mdad", "mdad_ci_low", "mdad_ci_high"]))


def _label(df: pd.DataFrame) -> pd.Series:
    """Plot label: the method, plus the selector when it is not random."""
    sel = df["selector"] if "selector" in df.columns else pd.Series("random", index=df.index)
    return df["method"].where(sel == "random", df["method"] + " [" + sel + "]")


def _plots(curves: pd.DataFrame, summary: pd.DataFrame, name: str):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = sorted(curves["size"].unique())
    fig, axes = plt.subplots(1, len(sizes), figsize=(3.2 * len(sizes), 3.2), squeeze=False, sharey=True)
    for ax, s in zip(axes[0], sizes):
        cs = curves[curves["size"] == s]
        for m, g in cs.groupby(_label(cs)):
            ax.plot(g["centroid"], g["agreement"], marker=".", label=m)
            ax.fill_between(g["centroid"], g["ci_low"], g["ci_high"], alpha=0.15)
        ax.axhline(0.8, ls="--", c="k", lw=0.8)
        ax.set(title=f"{name}, n={s}", xlabel="|full acc. diff| (points)")
    axes[0][0].set_ylabel("agreement")
    axes[0][-1].legend(fontsize=7)
    fig2, ax = plt.subplots(figsize=(5, 3.5))
    for m, g in summary.groupby(_label(summary)):
        ax.errorbar(g["size"], g["mdad"], yerr=[g["mdad"] - g["mdad_ci_low"], g["mdad_ci_high"] - g["mdad"]],
                    marker="o", capsize=3, label=m)
    ax.set(xscale="log", xlabel="micro-benchmark size", ylabel="MDAD (points)", title=f"{name}: MDAD vs size")
    ax.legend(fontsize=7)
    return {f"plots/{name}_agreement.png": fig, f"plots/{name}_mdad_vs_size.png": fig2}
