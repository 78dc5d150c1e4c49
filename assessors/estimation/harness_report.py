"""Tables, plots and the Markdown report of the benchmark-prediction harness."""
from __future__ import annotations

import logging
from typing import Mapping

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

log = logging.getLogger(__name__)


def eg_table(records: pd.DataFrame) -> pd.DataFrame:
    """EG (accuracy points) and EGR (% vs random_sampling) per benchmark, split, size, method."""
    r = records.assign(abs_err=(records["point"] - records["true"]).abs() * 100)
    per_trial = r.groupby(["benchmark", "split", "size", "method", "trial"])["abs_err"].mean()
    eg = per_trial.groupby(["benchmark", "split", "size", "method"]).agg(["mean", "count"])
    eg.columns = ["EG", "trials"]
    eg = eg.reset_index()
    rs = eg[eg["method"] == "random_sampling"].set_index(["benchmark", "split", "size"])["EG"]
    base = rs.reindex(pd.MultiIndex.from_frame(eg[["benchmark", "split", "size"]])).to_numpy()
    eg["EGR"] = (eg["EG"] - base) / base * 100
    return eg


def paper_table(eg: pd.DataFrame, size: int) -> pd.DataFrame:
    """Average over benchmarks at one size, in the paper's layout: method x (split, EG/EGR)."""
    sub = eg[eg["size"] == size]
    avg = sub.groupby(["method", "split"])[["EG", "EGR"]].mean().unstack("split")
    avg.columns = [f"{s} {m}" for m, s in avg.columns]
    cols = [c for c in ("interpolation EG", "interpolation EGR", "extrapolation EG", "extrapolation EGR")
            if c in avg.columns]
    return avg[cols].round(2)


def coverage_table(records: pd.DataFrame) -> pd.DataFrame:
    r = records.dropna(subset=["ci_low"])
    if r.empty:
        return pd.DataFrame()
    r = r.assign(covered=(r["ci_low"] <= r["true"]) & (r["true"] <= r["ci_high"]),
                 width=(r["ci_high"] - r["ci_low"]) * 100)
    return r.groupby(["method", "split", "size"]).agg(coverage=("covered", "mean"), width=("width", "mean"),
                                                      n=("covered", "size")).round(4).reset_index()


def similarity_gap(records: pd.DataFrame, sim: pd.DataFrame, size: int) -> pd.DataFrame:
    """Spearman correlation between a target's similarity to the sources and its normalised gap.

    Normalised gap = |estimate - truth| / EG of random_sampling on the same benchmark and split.
    """
    r = records[records["size"] == size].copy()
    r["abs_err"] = (r["point"] - r["true"]).abs()
    rs = r[r["method"] == "random_sampling"].groupby(["benchmark", "split"])["abs_err"].mean().rename("rs")
    r = r.join(rs, on=["benchmark", "split"])
    r["norm_gap"] = r["abs_err"] / r["rs"]
    s = sim.copy()
    s.loc[s["split"] == "extrapolation", "trial"] = -1  # extrapolation similarity does not vary by trial
    r["strial"] = np.where(r["split"] == "extrapolation", -1, r["trial"])
    r = r.merge(s.rename(columns={"trial": "strial"}), on=["benchmark", "split", "strial", "llm"], how="left")
    out = []
    for (m, sp), g in r.groupby(["method", "split"]):
        g = g.dropna(subset=["similarity", "norm_gap"])
        rho = spearmanr(g["similarity"], g["norm_gap"])[0] if len(g) > 2 else np.nan
        out.append((m, sp, rho, len(g)))
    return pd.DataFrame(out, columns=["method", "split", "spearman", "n"]).round(3), r


def timing_table(records: pd.DataFrame) -> pd.DataFrame:
    """Seconds per trial of each method (fit on the sources + estimate of every target).

    One row per method, slowest in total first: mean, median and max over the (benchmark, split,
    size, trial) fits, the mean at each core size (``n=<size>``), the number of fits and the
    total seconds, i.e. where the run's time went.
    """
    per = records.groupby(["benchmark", "split", "size", "trial", "method"]).agg(
        fit_s=("fit_s", "first"), est_s=("estimate_s", "sum"))
    per["trial_s"] = per["fit_s"] + per["est_s"]
    tab = per.groupby("method")["trial_s"].agg(["mean", "median", "max"])
    by_size = per.groupby(["method", "size"])["trial_s"].mean().unstack("size")
    by_size.columns = [f"n={s}" for s in by_size.columns]
    tab = tab.join(by_size).join(per.groupby("method")["trial_s"].agg(fits="count", total_s="sum"))
    return tab.sort_values("total_s", ascending=False).round(4)


def fewer_trials(records: pd.DataFrame) -> pd.Series:
    """Methods run on fewer (benchmark, split, trial) units than the most-run method: name -> how many
    they ran (empty when every method ran on all of them)."""
    units = records[["method", "benchmark", "split", "trial"]].drop_duplicates().groupby("method").size()
    return units[units < units.max()].sort_values()


def _plots(eg, cov, joined, sizes):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figs = {}
    splits = sorted(eg["split"].unique())
    fig, axes = plt.subplots(1, len(splits), figsize=(6 * len(splits), 4), squeeze=False)
    for ax, sp in zip(axes[0], splits):
        avg = eg[eg["split"] == sp].groupby(["method", "size"])["EG"].mean().unstack("method")
        avg.plot(ax=ax, marker="o", logx=True)
        ax.set(title=f"{sp}: EG averaged over benchmarks", xlabel="core-set size", ylabel="EG (accuracy points)")
        ax.legend(fontsize=7)
    figs["plots/eg_vs_size.png"] = fig
    if not cov.empty:
        fig, ax = plt.subplots(figsize=(7, 4))
        for (m, sp), g in cov.groupby(["method", "split"]):
            ax.plot(g["size"], g["coverage"], marker="o", label=f"{m} ({sp})")
        ax.axhline(0.95, ls="--", c="k", lw=0.8)
        ax.axhline(0.93, ls=":", c="r", lw=0.8)
        ax.set(xscale="log", xlabel="core-set size", ylabel="CI coverage", title="Coverage at nominal 95%")
        ax.legend(fontsize=7)
        figs["plots/coverage.png"] = fig
    shown = ("random_sampling_learn", "aipw", "aipw_assessor", "aipw_assessor_split", "aipw_latent", "pca", "gp_irt")
    methods = [m for m in shown if m in set(joined["method"])]
    if methods:
        fig, axes = plt.subplots(1, len(methods), figsize=(4 * len(methods), 3.5), squeeze=False)
        for ax, m in zip(axes[0], methods):
            g = joined[joined["method"] == m]
            for sp, gg in g.groupby("split"):
                ax.scatter(gg["similarity"], gg["norm_gap"], s=3, alpha=0.3, label=sp)
            ax.set(title=m, xlabel="max corr. with a source LLM", ylabel="normalised gap", yscale="symlog")
            ax.legend(fontsize=7)
        figs["plots/similarity_vs_gap.png"] = fig
    return figs


def _metrics(pt: pd.DataFrame, cov: pd.DataFrame, main: int, wall_seconds: float) -> dict[str, float]:
    """The headline metrics: the paper table at ``main`` items and every coverage, flat."""
    metrics = {"wall_seconds": wall_seconds}
    for m, row in pt.iterrows():
        for col, v in row.items():
            metrics[f"{m}.{col.replace(' ', '_')}.n{main}"] = float(v)
    for _, r in cov.iterrows():
        metrics[f"{r['method']}.{r['split']}.coverage.n{r['size']}"] = float(r["coverage"])
    return metrics


def _fewer_trials_note(records: pd.DataFrame) -> list[str]:
    """Report lines (and a log warning) naming the methods run on fewer split-trials than the others:
    their figures rest on fewer trials, which is never said silently."""
    few = fewer_trials(records)
    if few.empty:
        return []
    n_all = len(records[["benchmark", "split", "trial"]].drop_duplicates())
    line = ", ".join(f"{m} {n}" for m, n in few.items())
    log.warning("benchmark prediction: methods run on fewer split-trials than the others (of %d): %s", n_all, line)
    return [f"**FEWER TRIALS: these methods ran on fewer of the {n_all} split-trials than the others, so their "
            f"figures are noisier and not paired with every Random-Sampling trial: {line}.**", ""]


def report(records: pd.DataFrame, sim: pd.DataFrame, run_, wall_seconds: float, main_size: int = 50,
           log_records: bool = True, paper_anchors: Mapping | None = None) -> dict[str, float]:
    """Compute tables, log them with plots and a Markdown report; return headline metrics.

    ``main_size``: the number of evaluated items the headline table is about (the smallest size run
    when it was not); ``log_records``: also log every trial's record; ``paper_anchors``: the paper's
    figures to print beside ours, ``{caption: str, table: {method: {column: value}}}``.
    """
    sizes = [int(s) for s in sorted(records["size"].unique())]
    main = int(main_size) if int(main_size) in sizes else int(sizes[0])
    eg = eg_table(records)
    cov = coverage_table(records)
    sg, joined = similarity_gap(records, sim, main)
    tim = timing_table(records)
    tables = {f"tables/paper_table_n{s}.csv": paper_table(eg, s).reset_index() for s in sizes}
    tables.update({"tables/eg_per_benchmark.csv": eg, "tables/coverage.csv": cov,
                   "tables/similarity_gap.csv": sg, "tables/timing.csv": tim.reset_index()})
    if log_records:
        tables["tables/records.parquet"] = records  # millions of rows in a full run: parquet, not CSV
    for path, df in tables.items():
        run_.log_table(df, path)
    import matplotlib.pyplot as plt

    for path, fig in _plots(eg, cov, joined, sizes).items():
        run_.log_figure(fig, path)
        plt.close(fig)  # a harness writes several reports in one process: keep their figures from piling up
    pt = paper_table(eg, main)
    metrics = _metrics(pt, cov, main, wall_seconds)
    run_.log_metrics(metrics)
    md = ["# Benchmark prediction: estimation gap (EG) and reduction vs Random-Sampling (EGR)", "",
          f"Benchmarks: {', '.join(sorted(records['benchmark'].unique()))}. Sizes: {sizes}. "
          f"Trials: {int(records['trial'].max()) + 1} (max). Wall time: {wall_seconds:.0f} s.", ""]
    md += _fewer_trials_note(records)
    md += [f"## Averaged over benchmarks, n = {main} (EG in accuracy points, EGR in %)", "",
           pt.to_markdown(), ""]
    anchors = paper_anchors
    if anchors:  # the paper's figures, from the configuration, printed beside ours
        table = pd.DataFrame.from_dict({m: dict(v) for m, v in anchors["table"].items()}, orient="index")
        md += [f"Paper anchors ({anchors['caption']}):", "", table.to_markdown(), ""]
    for s in sizes:
        if s != main:
            md += [f"## n = {s}", "", paper_table(eg, s).to_markdown(), ""]
    md += ["## Per benchmark (n = %d)" % main, "",
           eg[eg["size"] == main].pivot_table(index=["benchmark", "method"], columns="split",
                                              values=["EG", "EGR"]).round(2).to_markdown(), ""]
    if not cov.empty:
        md += ["## CI coverage (nominal 95%) and mean width (points)", "", cov.to_markdown(index=False), ""]
    md += ["## Similarity to sources vs normalised gap (Spearman)", "", sg.to_markdown(index=False), "",
           "## Time per trial (fit + estimate for all targets, seconds; total_s: the run's seconds per method)", "",
           tim.to_markdown(), ""]
    run_.log_text("\n".join(md), "report.md")
    return metrics
