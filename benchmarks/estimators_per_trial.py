"""Per-trial time of each benchmark estimator on the real score matrices; prints JSON.

A trial = fit on the source LLMs + estimate for all target LLMs, interpolation split, one core
size. IRT fits are cached per source split, so the first size of a split pays for them; we time
both the first (cold) and a second size (warm) to give the cache effect.

    python benchmarks/estimators_per_trial.py [--trials 2] [--benchmarks rte,qnli]
"""
from __future__ import annotations

import argparse
import json
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate
from sklearn.base import clone
from threadpoolctl import threadpool_limits

from assessors.estimation import harness
from assessors.estimation.benchmark import base


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=2)
    ap.add_argument("--benchmarks", default="")
    ap.add_argument("--sizes", default="50,100")
    args = ap.parse_args()
    conf = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "conf")
    with initialize_config_dir(config_dir=os.path.abspath(conf), version_base=None):
        cfg = compose("train", overrides=["experiment=benchmark_prediction", "seed=0", "features=success_pattern"])
    ests = {k: instantiate(v) for k, v in cfg.estimators.items()}
    bench = dict(cfg.benchmark_prediction.benchmarks)
    if args.benchmarks:
        bench = {k: bench[k] for k in args.benchmarks.split(",")}
    sizes = [int(s) for s in args.sizes.split(",")]
    out = {"trials": args.trials, "sizes": sizes, "per_benchmark": {}}
    with threadpool_limits(1):
        for name, c in bench.items():
            res = instantiate(c)
            S = res.success.astype(np.float64)
            acc = np.nanmean(S, 1)
            row = {"shape": list(S.shape)}
            for m, proto in ests.items():
                cold, warm = [], []
                for t in range(args.trials):
                    base._CACHE.clear()
                    src, tgt = harness.model_split(acc, "interpolation", t)
                    for k, size in enumerate(s for s in sizes if s < S.shape[1]):
                        est = clone(proto).set_params(core_size=size, seed=t)
                        core = np.sort(np.random.default_rng(t).choice(S.shape[1], size, replace=False))
                        t0 = time.perf_counter()
                        est.fit(S[src], core_index=None if est.selects_core else core)
                        est.estimate(S[tgt][:, est.core_index_])
                        (cold if k == 0 else warm).append(time.perf_counter() - t0)
                row[m] = {"cold_s": round(float(np.mean(cold)), 4),
                          "warm_s": round(float(np.mean(warm)), 4) if warm else None}
            out["per_benchmark"][name] = row
            print(json.dumps({name: row}), flush=True)
    # projected full harness: 2 splits x len(sizes) sizes x 100 trials; interpolation has a new
    # source split per trial (cold once per trial), extrapolation one split (cold once).
    methods = list(ests)
    proj = {}
    for m in methods:
        tot = 0.0
        for name, row in out["per_benchmark"].items():
            c, w = row[m]["cold_s"], row[m]["warm_s"] or row[m]["cold_s"]
            tot += 100 * (c + 3 * w) + (c + 399 * w)
        proj[m] = round(tot, 1)
    out["projected_full_harness_s_4_sizes_100_trials"] = proj
    out["projected_total_s"] = round(sum(proj.values()), 1)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
