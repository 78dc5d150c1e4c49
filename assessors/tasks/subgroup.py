"""``experiment=subgroup_eb``: DT / SR / EB subgroup accuracy (:mod:`assessors.estimation.subgroup.harness`)."""
from __future__ import annotations

import logging

import numpy as np
from hydra.utils import instantiate

from assessors.errors import ConfigError, DataError
from assessors.estimation.subgroup import harness
from assessors.estimation.subgroup.sampling import allocation
from assessors.features.parts import featurize_parts
from assessors.tasks.wrapper import task_wrapper

log = logging.getLogger(__name__)


def _embed(cfg, results):
    """Prompt embeddings of every instance (rows in ``results.instance_ids`` order), or None."""
    path = cfg.subgroup.get("embeddings_path")
    if path:  # precomputed prompt embeddings, rows in the order of results.instance_ids
        emb = np.load(path, allow_pickle=False)
        if emb.ndim != 2 or emb.shape[0] != len(results.instance_ids):
            raise DataError(f"{path}: embeddings of shape {emb.shape}, expected ({len(results.instance_ids)}, d)")
        return emb.astype(float)
    if cfg.get("features") is None or not results.has_prompts:
        log.warning("no prompt features: SR uses LLM intercepts (and the assessor mean) only")
        return None
    ids = list(results.instance_ids)
    return np.asarray(featurize_parts(instantiate(cfg.features), results, {"all": ids}, "all")["all"], dtype=float)


def _assessor_mean(path, shape: tuple, codes: np.ndarray, G: int):
    """Per-(LLM, subgroup) mean of an assessor's predictions saved at ``path`` (None without one)."""
    if not path:
        return None
    pred = np.load(path, allow_pickle=False)
    if pred.shape != shape:
        raise DataError(f"{path}: shape {pred.shape}, expected {shape}")
    return harness.group_means(pred, codes, G)


def execute(cfg, run) -> dict:
    """Sample, estimate and score ``subgroup.repeats`` times; log metrics, table, forest plot and report."""
    sub = cfg.subgroup
    if sub.get("prior_sources", "full") not in ("full", "sample"):
        raise ConfigError(f"subgroup.prior_sources must be 'full' or 'sample', got {sub.prior_sources!r}")
    results = instantiate(cfg.data)
    join = list(sub.get("join") or [])
    if join:  # more data sets beside `data`, on the LLMs they share: each brings its own subgroups
        results = harness.join_on_llms([results] + [instantiate(d) for d in join])
    results, emb = harness.drop_incomplete(results, _embed(cfg, results))
    mode = sub.get("subgroups", "column")
    names, codes = harness.subgroup_codes(results, mode, instantiate(sub.kmeans) if mode == "kmeans" else None, emb)
    G, success = len(names), results.success
    if G < 4:
        raise DataError(f"{results.name}: only {G} subgroups; EB with 2-fold cross-fitting needs several")
    sizes = np.bincount(codes, minlength=G)
    group_x = None if emb is None else np.stack([emb[codes == g].mean(0) for g in range(G)])
    truth = harness.group_means(success, codes, G)  # (n_llms, G)
    n_g = allocation(sizes, int(sub.n_total), int(sub.min_per_group))
    small = n_g <= int(sub.size_threshold)
    whole = n_g >= sizes
    if whole.all():
        raise ConfigError(f"every subgroup would be sampled whole (n_total={sub.n_total}, min_per_group={sub.min_per_group} "
                          f"for {int(sizes.sum())} items): lower subgroup.n_total or subgroup.min_per_group")
    if whole.any():
        log.warning("%d subgroup(s) are sampled whole (fewer items than min_per_group): their direct estimate is "
                    "exact, e.g. %s", int(whole.sum()), names[np.flatnonzero(whole)[0]])
    out = harness.repeat_estimates(success, codes, n_g, truth, instantiate(sub.direct), instantiate(sub.eb), group_x,
                                   _assessor_mean(sub.get("assessor_mean_path"), success.shape, codes, G),
                                   repeats=int(sub.repeats), rng=np.random.default_rng(int(cfg.get("seed", 0))),
                                   progress=sub.get("progress", True),
                                   full_answers=sub.get("prior_sources", "full") == "full")
    metrics = harness.summary_metrics(out, n_g, small, int(sub.repeats), success.shape[0])
    run.log_metrics(metrics)
    run.log_table(harness.per_group_table(names, sizes, n_g, out), "tables/subgroup_metrics.csv")
    llm = sub.get("forest_llm") or results.llms[int(np.argsort(truth.mean(1))[len(results.llms) // 2])]
    i = results.llm_index([llm])[0]
    from assessors.estimation.subgroup.plots import forest_plot

    first = out["first"]
    fig = forest_plot(names, truth[i], tuple(a[i] for a in first[0]), tuple(a[i] for a in first[1]), n_g,
                      title=f"{results.name}: {llm}, one sample of {int(n_g.sum())} items (repeat 0)")
    run.log_figure(fig, "plots/forest_dt_vs_eb.png")
    run.log_text(harness.report(metrics, results.name, cfg.subgroup.get("reference")), "report.md")
    return metrics


run = task_wrapper("subgroup_eb")(execute)
