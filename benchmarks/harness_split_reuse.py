"""Interpolation trials sharing a model split (``benchmark_prediction.trials_per_split``): time and error.

Runs the harness (:func:`assessors.estimation.harness.evaluate_benchmark`, every configured method,
interpolation only) once per ``--per-split`` value on the same benchmarks, trials and core sizes,
in one process, one after the other, and prints JSON: per method the seconds per fit in trials
that open a split (cold: the source-only fits run) and in the others (warm: they are reused), EG
(mean absolute error, accuracy points) with its standard error over model splits (trials of one
split are not independent), and the coverage of the 95% intervals.

    python benchmarks/harness_split_reuse.py [--benchmarks rte,legalbench] [--trials 20] [--sizes 50]
        [--per-split 1,10]
"""
from __future__ import annotations

import argparse
import json
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import pandas as pd
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate

from assessors.estimation import harness
from assessors.estimation.benchmark import base
from assessors.threads import thread_limits


def summarise(df: pd.DataFrame, per_split: int) -> dict:
    """Per method: cold / warm seconds per fit, EG and its standard error over splits, coverage."""
    df = df.assign(err=(df["point"] - df["true"]).abs() * 100, split_id=df["trial"] // per_split,
                   fit=df["fit_s"] + df["estimate_s"] * df.groupby(["benchmark", "trial", "size", "method"])
                   ["llm"].transform("size"))
    out = {}
    for m, g in df.groupby("method", sort=False):
        fits = g.drop_duplicates(["benchmark", "trial", "size"])
        cold = fits["trial"] % per_split == 0
        per_split_eg = g.groupby("split_id")["err"].mean()
        cov = g.dropna(subset=["ci_low"])
        out[m] = {"cold_s": round(float(fits.loc[cold, "fit"].mean()), 4),
                  "warm_s": round(float(fits.loc[~cold, "fit"].mean()), 4) if (~cold).any() else None,
                  "total_s": round(float(fits["fit"].sum()), 2),
                  "eg": round(float(g["err"].mean()), 3),
                  "eg_se_over_splits": round(float(per_split_eg.std(ddof=1) / np.sqrt(per_split_eg.size)), 3)
                  if per_split_eg.size > 1 else None,
                  "coverage": round(float(((cov["ci_low"] <= cov["true"]) & (cov["true"] <= cov["ci_high"])).mean()), 3)
                  if len(cov) else None, "n_intervals": len(cov)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--benchmarks", default="rte,legalbench,bbh_musr,mrpc")
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--sizes", default="50")
    ap.add_argument("--per-split", default="1,10")
    ap.add_argument("--methods", default="", help="comma-separated subset of the configured estimators")
    args = ap.parse_args()
    conf = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "conf")
    with initialize_config_dir(config_dir=os.path.abspath(conf), version_base=None):
        cfg = compose("train", overrides=["experiment=benchmark_prediction", "seed=0", "features=success_pattern"])
    ests = {k: instantiate(v) for k, v in cfg.estimators.items()}
    if args.methods:
        ests = {k: ests[k] for k in args.methods.split(",")}
    data = {k: instantiate(cfg.benchmark_prediction.benchmarks[k]) for k in args.benchmarks.split(",")}
    sizes = [int(s) for s in args.sizes.split(",")]
    out = {"benchmarks": list(data), "trials": args.trials, "sizes": sizes, "runs": {}}
    with thread_limits(1):  # one BLAS / OpenMP / torch thread, as a harness worker with n_jobs=2
        for r in (int(x) for x in args.per_split.split(",")):
            base._CACHE.clear()
            t0, load0 = time.perf_counter(), os.getloadavg()[0]
            df = pd.concat([harness.evaluate_benchmark(name, res.success, res.llms, ests, ["interpolation"], sizes,
                                                       args.trials, progress=False, trials_per_split=r)
                            for name, res in data.items()], ignore_index=True)
            out["runs"][r] = {"wall_s": round(time.perf_counter() - t0, 1), "load": [load0, os.getloadavg()[0]],
                              "methods": summarise(df, r)}
            print(json.dumps({r: out["runs"][r]}), flush=True)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
