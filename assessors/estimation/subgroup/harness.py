"""Evaluation harness for DT / SR / EB subgroup accuracy (``experiment=subgroup_eb``).

Each repeat samples items per subgroup proportional to subgroup size (at least
``min_per_group``), grades every LLM on them, estimates every (LLM, subgroup) accuracy, and
compares with the full-data accuracy. Reported: MSE per method (overall and by per-subgroup
sample size <= / > ``size_threshold``), interval coverage and mean width, ratios against DT
(beside the reference values configured in ``subgroup.reference``), and a forest plot for one LLM.
"""
from __future__ import annotations

import logging

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from assessors.errors import ConfigError, DataError
from assessors.estimation.subgroup.sampling import allocation, draw_sample

log = logging.getLogger(__name__)


def run(cfg) -> dict:
    """Hydra task: ``hydra.utils.instantiate(cfg.task)(cfg)``; logs to the configured tracker."""
    from assessors.tracking import tracker_from_cfg

    with tracker_from_cfg(cfg).start_run(cfg.get("run_name", "subgroup_eb"), cfg) as run_:
        return _run(cfg, run_)


def subgroup_codes(results, cfg_sub, embeddings=None):
    """Subgroup label per instance: the data's ``subgroup`` column, or k-means clusters."""
    from hydra.utils import instantiate

    mode = cfg_sub.get("subgroups", "column")
    if mode == "column":
        labels = results.instances["subgroup"].astype(str).to_numpy()
    elif mode == "kmeans":
        if embeddings is None:
            raise ConfigError("subgroups=kmeans needs prompt embeddings (configure `features`)")
        km = instantiate(cfg_sub.kmeans).fit(embeddings)
        labels = np.array([f"cluster_{i:02d}" for i in km.labels_])
        log.info("k-means subgroups: k=%d by silhouette, %d after merging", km.k_, len(np.unique(labels)))
    else:
        raise ConfigError(f"subgroup.subgroups must be 'column' or 'kmeans', got {mode!r}")
    names, codes = np.unique(labels, return_inverse=True)
    return names, codes


def _embed(cfg, results):
    from hydra.utils import instantiate

    path = cfg.subgroup.get("embeddings_path")
    if path:  # precomputed prompt embeddings, rows in the order of results.instance_ids
        emb = np.load(path, allow_pickle=False)
        if emb.ndim != 2 or emb.shape[0] != len(results.instance_ids):
            raise DataError(f"{path}: embeddings of shape {emb.shape}, expected ({len(results.instance_ids)}, d)")
        return emb.astype(float)
    if cfg.get("features") is None or not results.has_prompts:
        log.warning("no prompt features: SR uses LLM intercepts (and the assessor mean) only")
        return None
    feat = instantiate(cfg.features)
    prompts = results.prompts()
    return np.asarray(feat.fit(prompts).transform(prompts), dtype=float)


def _run(cfg, run) -> dict:
    from hydra.utils import instantiate

    sub = cfg.subgroup
    results = instantiate(cfg.data)
    emb = _embed(cfg, results)
    success = results.success
    if np.isnan(success).any():
        # Keep instances every LLM was graded on, so each cell's truth and sample are comparable.
        keep = ~np.isnan(success).any(0)
        log.warning("dropping %d instances with missing grades", int((~keep).sum()))
        results = results.subset(ids=np.asarray(results.instance_ids)[keep])
        success = results.success
        emb = None if emb is None else emb[keep]
    names, codes = subgroup_codes(results, sub, emb)
    G = len(names)
    if G < 4:
        raise DataError(f"{results.name}: only {G} subgroups; EB with 2-fold cross-fitting needs several")
    sizes = np.bincount(codes, minlength=G)
    group_x = None if emb is None else np.stack([emb[codes == g].mean(0) for g in range(G)])
    truth = np.stack([success[:, codes == g].mean(1) for g in range(G)], axis=1)  # (n_llms, G)
    a_mean = None
    if sub.get("assessor_mean_path"):
        pred = np.load(sub.assessor_mean_path, allow_pickle=False)
        if pred.shape != success.shape:
            raise DataError(f"{sub.assessor_mean_path}: shape {pred.shape}, expected {success.shape}")
        a_mean = np.stack([pred[:, codes == g].mean(1) for g in range(G)], axis=1)
    n_g = allocation(sizes, int(sub.n_total), int(sub.min_per_group))
    small = n_g <= int(sub.size_threshold)
    rng = np.random.default_rng(int(cfg.get("seed", 0)))
    dt_proto, eb_proto = instantiate(sub.direct), instantiate(sub.eb)
    err = {m: [] for m in ("dt", "sr", "eb")}
    cover = {m: [] for m in ("dt", "eb")}
    width = {m: [] for m in ("dt", "eb")}
    first = None
    for rep in tqdm(range(int(sub.repeats)), desc="subgroup repeats", disable=not sub.get("progress", True)):
        idx = draw_sample(codes, n_g, rng)
        k = np.stack([success[:, i].sum(1) for i in idx], axis=1)
        trials = np.broadcast_to(n_g, k.shape).astype(float)
        dt = dt_proto.fit(k, trials)
        eb_proto.set_params(regressor__random_state=rep)
        eb = eb_proto.fit(k, trials, group_x, a_mean)
        for m, est in (("dt", dt.estimate_), ("sr", eb.regression_), ("eb", eb.estimate_)):
            err[m].append((est - truth) ** 2)
        for m, e in (("dt", dt), ("eb", eb)):
            cover[m].append((e.lower_ <= truth) & (truth <= e.upper_))
            width[m].append(e.upper_ - e.lower_)
        if first is None:
            first = (dt.estimate_, dt.lower_, dt.upper_), (eb.estimate_, eb.lower_, eb.upper_)
    err = {m: np.stack(v) for m, v in err.items()}  # (repeats, n_llms, G)
    metrics = {"repeats": float(sub.repeats), "n_llms": float(success.shape[0]), "n_subgroups": float(G),
               "n_sampled": float(n_g.sum()), "n_subgroups_small": float(small.sum())}
    for m, e in err.items():
        metrics[f"mse_{m}"] = float(e.mean())
        metrics[f"mse_{m}_small"] = float(e[:, :, small].mean()) if small.any() else float("nan")
        metrics[f"mse_{m}_large"] = float(e[:, :, ~small].mean()) if (~small).any() else float("nan")
    for m in ("dt", "eb"):
        metrics[f"coverage_{m}"] = float(np.mean(cover[m]))
        metrics[f"width_{m}"] = float(np.mean(width[m]))
    metrics["mse_ratio_eb_dt"] = metrics["mse_eb"] / metrics["mse_dt"]
    metrics["mse_ratio_eb_sr"] = metrics["mse_eb"] / metrics["mse_sr"]
    metrics["mse_ratio_sr_dt"] = metrics["mse_sr"] / metrics["mse_dt"]
    metrics["width_ratio_eb_dt"] = metrics["width_eb"] / metrics["width_dt"]
    for part in ("small", "large"):
        metrics[f"mse_ratio_eb_dt_{part}"] = metrics[f"mse_eb_{part}"] / metrics[f"mse_dt_{part}"]
    metrics["objective"] = metrics["mse_eb"]  # what a Hydra sweeper minimises
    run.log_metrics(metrics)

    per_group = pd.DataFrame({"subgroup": names, "size": sizes, "n_sampled": n_g,
                              **{f"mse_{m}": err[m].mean((0, 1)) for m in err},
                              **{f"coverage_{m}": np.mean(cover[m], axis=(0, 1)) for m in cover},
                              **{f"width_{m}": np.mean(width[m], axis=(0, 1)) for m in width}})
    run.log_table(per_group, "tables/subgroup_metrics.csv")
    llm = sub.get("forest_llm") or results.llms[int(np.argsort(truth.mean(1))[len(results.llms) // 2])]
    i = results.llm_index([llm])[0]
    from assessors.estimation.subgroup.plots import forest_plot

    fig = forest_plot(names, truth[i], tuple(a[i] for a in first[0]), tuple(a[i] for a in first[1]), n_g,
                      title=f"{results.name}: {llm}, one sample of {int(n_g.sum())} items (repeat 0)")
    run.log_figure(fig, "plots/forest_dt_vs_eb.png")
    run.log_text(report(metrics, results.name, cfg.subgroup.get("reference")), "report.md")
    return metrics


def report(metrics: dict, name: str, reference=None) -> str:
    """Markdown summary of the harness's metrics.

    Parameters
    ----------
    metrics : dict
        What :func:`run` returns.
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
    for m in ("dt", "sr", "eb"):
        cov = metrics.get(f"coverage_{m}", float("nan"))
        wid = metrics.get(f"width_{m}", float("nan"))
        lines.append(f"| {m.upper()} | {metrics[f'mse_{m}']:.5f} | {metrics[f'mse_{m}_small']:.5f} | "
                     f"{metrics[f'mse_{m}_large']:.5f} | {cov:.3f} | {wid:.4f} |")
    if reference:
        cols = list(dict.fromkeys(c for row in reference.values() for c in row))
        lines += ["", "| quantity | ours | " + " | ".join(cols) + " |", "|---|---|" + "---|" * len(cols)]
        for key, row in reference.items():
            lines.append(f"| {key} | {metrics[key]:.3f} | " + " | ".join(str(row.get(c, "-")) for c in cols) + " |")
    return "\n".join(lines) + "\n"
