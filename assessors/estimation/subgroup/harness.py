"""Evaluation harness for DT / SR / EB subgroup accuracy (``experiment=subgroup_eb``, run by
:mod:`assessors.tasks.subgroup`).

Each repeat samples items per subgroup proportional to subgroup size (at least
``min_per_group``), grades every LLM on them, estimates every (LLM, subgroup) accuracy, and
compares with the full-data accuracy. Reported: MSE per method (overall and by per-subgroup
sample size <= / > ``size_threshold``), interval coverage and mean width, ratios against DT and
the configured reference values, and a forest plot for one LLM.
"""
from __future__ import annotations

import logging

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from assessors.errors import ConfigError, DataError
from assessors.estimation.subgroup.base import ItemAnswers
from assessors.estimation.subgroup.sampling import draw_sample

log = logging.getLogger(__name__)


def subgroup_codes(results, mode: str = "column", kmeans=None, embeddings=None):
    """Subgroup label per instance: the data's ``subgroup`` column, or k-means clusters.

    Parameters
    ----------
    results : Results
    mode : {"column", "kmeans"}
    kmeans : estimator, optional
        Unfitted clusterer with ``labels_`` and ``k_`` (``mode="kmeans"``).
    embeddings : ndarray of shape (n_instances, d), optional
        What ``kmeans`` clusters.

    Returns
    -------
    names : ndarray of shape (G,)
    codes : ndarray of shape (n_instances,), ints in ``[0, G)``
    """
    if mode == "column":
        labels = results.instances["subgroup"].astype(str).to_numpy()
    elif mode == "kmeans":
        if embeddings is None:
            raise ConfigError("subgroups=kmeans needs prompt embeddings (configure `features`)")
        km = kmeans.fit(embeddings)
        labels = np.array([f"cluster_{i:02d}" for i in km.labels_])
        log.info("k-means subgroups: k=%d by silhouette, %d after merging", km.k_, len(np.unique(labels)))
    else:
        raise ConfigError(f"subgroup.subgroups must be 'column' or 'kmeans', got {mode!r}")
    names, codes = np.unique(labels, return_inverse=True)
    return names, codes


def join_on_llms(parts):
    """Data sets side by side on the LLMs they all hold, each instance keeping its own subgroup.

    Parameters
    ----------
    parts : list of Results
        Instance ids must differ across parts (the loaders prefix them with the benchmark).

    Returns
    -------
    Results
        The shared LLMs (in the first part's order) x every part's instances, success only.
    """
    from assessors.data.results import Results

    shared = set.intersection(*(set(r.llms) for r in parts))
    llms = [m for m in parts[0].llms if m in shared]
    if len(llms) < 3:
        raise DataError(f"joining {[r.name for r in parts]}: only {len(llms)} LLMs are in every part; "
                        "join data sets that grade the same LLMs (by name)")
    instances = pd.concat([r.instances[["prompt", "subgroup", "target"]] for r in parts])
    dup = instances.index[instances.index.duplicated()]
    if len(dup):
        raise DataError(f"joining {[r.name for r in parts]}: instance id {dup[0]!r} is in two parts; join distinct data sets")
    log.info("joined %s on %d shared LLMs", [r.name for r in parts], len(llms))
    return Results(instances, llms, np.hstack([r.matrix(llms=llms) for r in parts]),
                   name="+".join(r.name for r in parts))


def drop_incomplete(results, embeddings=None):
    """Keep the instances every LLM was graded on, so each cell's truth and sample are comparable.

    Returns ``(results, embeddings)`` restricted to those instances.
    """
    keep = ~np.isnan(results.success).any(0)
    if keep.all():
        return results, embeddings
    log.warning("dropping %d instances with missing grades", int((~keep).sum()))
    results = results.subset(ids=np.asarray(results.instance_ids)[keep])
    return results, None if embeddings is None else embeddings[keep]


def group_means(M: np.ndarray, codes: np.ndarray, G: int) -> np.ndarray:
    """Per-subgroup column means of ``M`` (n_rows, n_instances) -> (n_rows, G)."""
    return np.stack([M[:, codes == g].mean(1) for g in range(G)], axis=1)


def repeat_estimates(success: np.ndarray, codes: np.ndarray, n_g: np.ndarray, truth: np.ndarray, direct, eb,
                     group_x=None, a_mean=None, repeats: int = 100, rng=None, progress: bool = True,
                     full_answers: bool = True) -> dict:
    """Sample, estimate and score ``repeats`` times.

    Parameters
    ----------
    success : ndarray of shape (n_llms, n_instances)
    codes : ndarray of shape (n_instances,)
    n_g : ndarray of shape (G,)
        Items sampled per subgroup.
    truth : ndarray of shape (n_llms, G)
        Full-data accuracy.
    direct, eb : estimators
        The DT and EB estimators (refitted each repeat).
    group_x : ndarray of shape (G, d), optional
    a_mean : ndarray of shape (n_llms, G), optional
    full_answers : bool
        Hand item-level prior models every LLM's full answers (item parameters are then fitted on
        the other LLMs' full answers, as for a new LLM beside fully graded ones); False gives them
        the sampled answers only.

    Returns
    -------
    dict with ``err`` {dt, sr, eb: (repeats, n_llms, G) squared errors}, ``cover`` and ``width``
    {dt, eb: lists of (n_llms, G)}, ``first`` (DT and EB estimate/lower/upper of repeat 0) and
    ``scope`` (EB's ``scope_`` per repeat, None for an estimator without one).
    """
    rng = rng if rng is not None else np.random.default_rng(0)
    err = {m: [] for m in ("dt", "sr", "eb")}
    cover = {m: [] for m in ("dt", "eb")}
    width = {m: [] for m in ("dt", "eb")}
    first, scopes = None, []
    for rep in tqdm(range(repeats), desc="subgroup repeats", disable=not progress):
        idx = draw_sample(codes, n_g, rng)
        k = np.stack([success[:, i].sum(1) for i in idx], axis=1)
        trials = np.broadcast_to(n_g, k.shape).astype(float)
        sample = np.full(success.shape, np.nan)
        cols = np.concatenate(idx)
        sample[:, cols] = success[:, cols]
        answers = ItemAnswers(sample, codes, success if full_answers else None)
        dt = direct.fit(k, trials)
        eb.set_params(regressor__random_state=rep)
        fitted = eb.fit(k, trials, group_x, a_mean, answers)
        for m, est in (("dt", dt.estimate_), ("sr", fitted.regression_), ("eb", fitted.estimate_)):
            err[m].append((est - truth) ** 2)
        for m, e in (("dt", dt), ("eb", fitted)):
            cover[m].append((e.lower_ <= truth) & (truth <= e.upper_))
            width[m].append(e.upper_ - e.lower_)
        scopes.append(getattr(fitted, "scope_", None))
        if first is None:
            first = (dt.estimate_, dt.lower_, dt.upper_), (fitted.estimate_, fitted.lower_, fitted.upper_)
    return {"err": {m: np.stack(v) for m, v in err.items()}, "cover": cover, "width": width, "first": first,
            "scope": scopes}


def _mean_or_nan(e: np.ndarray, cols: np.ndarray) -> float:
    return float(e[:, :, cols].mean()) if cols.any() else float("nan")


def summary_metrics(out: dict, n_g: np.ndarray, small: np.ndarray, repeats: int, n_llms: int) -> dict[str, float]:
    """MSE (overall, small and large subgroups), coverage, width and their ratios from
    :func:`repeat_estimates`' output; ``small`` marks the subgroups with n <= threshold."""
    metrics = {"repeats": float(repeats), "n_llms": float(n_llms), "n_subgroups": float(len(n_g)),
               "n_sampled": float(n_g.sum()), "n_subgroups_small": float(small.sum())}
    for m, e in out["err"].items():
        metrics[f"mse_{m}"] = float(e.mean())
        metrics[f"mse_{m}_small"] = _mean_or_nan(e, small)
        metrics[f"mse_{m}_large"] = _mean_or_nan(e, ~small)
    for m in ("dt", "eb"):
        metrics[f"coverage_{m}"] = float(np.mean(out["cover"][m]))
        metrics[f"width_{m}"] = float(np.mean(out["width"][m]))
    for scope in sorted({s for s in out.get("scope", []) if s is not None}):  # what scope="auto" chose
        metrics[f"scope_share_{scope}"] = float(np.mean([s == scope for s in out["scope"]]))
    metrics["mse_ratio_eb_dt"] = metrics["mse_eb"] / metrics["mse_dt"]
    metrics["mse_ratio_eb_sr"] = metrics["mse_eb"] / metrics["mse_sr"]
    metrics["mse_ratio_sr_dt"] = metrics["mse_sr"] / metrics["mse_dt"]
    metrics["width_ratio_eb_dt"] = metrics["width_eb"] / metrics["width_dt"]
    for part in ("small", "large"):
        metrics[f"mse_ratio_eb_dt_{part}"] = metrics[f"mse_eb_{part}"] / metrics[f"mse_dt_{part}"]
    return metrics


def per_group_table(names, sizes: np.ndarray, n_g: np.ndarray, out: dict) -> pd.DataFrame:
    """One row per subgroup: size, items sampled, MSE, coverage and width per method."""
    return pd.DataFrame({"subgroup": names, "size": sizes, "n_sampled": n_g,
                         **{f"mse_{m}": e.mean((0, 1)) for m, e in out["err"].items()},
                         **{f"coverage_{m}": np.mean(v, axis=(0, 1)) for m, v in out["cover"].items()},
                         **{f"width_{m}": np.mean(v, axis=(0, 1)) for m, v in out["width"].items()}})


def report(metrics: dict, name: str, reference=None) -> str:
    """Markdown summary of the harness's metrics.

    Parameters
    ----------
    metrics : dict
        What the subgroup task returns.
    name : str
        The data's name.
    reference : mapping of metric key -> mapping of column -> str, optional
        Values printed beside ours, one row per key (e.g. a target and the paper's figure).
    """
    lines = [f"# Subgroup accuracy (DT / SR / EB) on {name}", "",
             f"{int(metrics['repeats'])} repeats, {int(metrics['n_llms'])} LLMs x {int(metrics['n_subgroups'])} "
             f"subgroups, {int(metrics['n_sampled'])} items sampled per repeat "
             f"({int(metrics['n_subgroups_small'])} subgroups with n <= threshold).", "",
             "| method | MSE | MSE (small n) | MSE (large n) | coverage | mean CI width |", "|---|---|---|---|---|---|"]
    for m in ("dt", "sr", "eb"):  # "sr" is EB's prior model, whichever it is
        cov = metrics.get(f"coverage_{m}", float("nan"))
        wid = metrics.get(f"width_{m}", float("nan"))
        lines.append(f"| {m.upper()} | {metrics[f'mse_{m}']:.5f} | {metrics[f'mse_{m}_small']:.5f} | "
                     f"{metrics[f'mse_{m}_large']:.5f} | {cov:.3f} | {wid:.4f} |")
    shares = {k[len("scope_share_"):]: v for k, v in metrics.items() if k.startswith("scope_share_")}
    if shares:  # which scope EB used (scope="auto" chooses one per repeat)
        lines += ["", "EB's scope per repeat: " + ", ".join(f"{k} {v:.0%}" for k, v in shares.items()) + "."]
    if reference:
        cols = list(dict.fromkeys(c for row in reference.values() for c in row))
        lines += ["", "| quantity | ours | " + " | ".join(cols) + " |", "|---|---|" + "---|" * len(cols)]
        for key, row in reference.items():
            lines.append(f"| {key} | {metrics[key]:.3f} | " + " | ".join(str(row.get(c, "-")) for c in cols) + " |")
    return "\n".join(lines) + "\n"
