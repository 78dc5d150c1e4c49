"""Per-trial time and error of each benchmark estimator on the real score matrices; prints JSON.

A trial = fit on the source LLMs + estimate for all target LLMs, one split, one core size.
Per-source-split work (IRT fits, item correlations) is cached and shared by the methods and sizes of
one (split, trial), as in a harness worker, so the first size of a split pays for it (and p-IRT for
the IRT fit gp-IRT reuses); we time both the first (cold) and the later sizes (warm), and
report each method's error (EG: mean absolute error in accuracy points over targets, trials, sizes)
and, for methods with intervals, their coverage of the true accuracy.

    python benchmarks/estimators_per_trial.py [--trials 2] [--benchmarks rte,qnli] [--methods aipw,pca]
        [--splits interpolation,extrapolation] [--variant NAME=METHOD:param=value,...] [--trials-per-split 10]

``--variant`` adds a copy of METHOD with other parameters (e.g. the reference implementation's
settings), timed in the same run so that ratios compare like with like under the same load:
``--variant anchor_full=anchor_points_weighted:max_items=null``.
"""
from __future__ import annotations

import argparse
import json
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import yaml
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate
from sklearn.base import clone

from assessors.estimation import harness
from assessors.estimation.benchmark import base
from assessors.threads import thread_limits


def _variants(specs: list[str], ests: dict) -> dict:
    """Extra estimators from ``NAME=METHOD:param=value,...`` specs (values parsed as YAML; a
    dotted param such as ``proxy.assessor.classifier.estimator.n_estimators`` sets a nested attribute)."""
    out = {}
    for spec in specs:
        name, rest = spec.split("=", 1)
        method, _, params = rest.partition(":")
        kv = dict(p.split("=", 1) for p in params.split(",") if p)
        est = clone(ests[method])
        for key, v in kv.items():
            *path, leaf = key.split(".")  # a dotted key reaches inside non-scikit-learn parts
            obj = est
            for attr in path:
                obj = getattr(obj, attr)
            setattr(obj, leaf, yaml.safe_load(v))
        out[name] = est
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=2)
    ap.add_argument("--benchmarks", default="")
    ap.add_argument("--sizes", default="50,100")
    ap.add_argument("--splits", default="interpolation")
    ap.add_argument("--methods", default="", help="comma-separated subset of the configured estimators")
    ap.add_argument("--variant", action="append", default=[], help="NAME=METHOD:param=value,...")
    ap.add_argument("--trials-per-split", type=int, default=1,
                    help="interpolation trials sharing one model split (benchmark_prediction.trials_per_split)")
    args = ap.parse_args()
    conf = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "conf")
    with initialize_config_dir(config_dir=os.path.abspath(conf), version_base=None):
        cfg = compose("train", overrides=["experiment=benchmark_prediction", "seed=0", "features=success_pattern"])
    ests = {k: instantiate(v) for k, v in cfg.estimators.items()}
    extra = _variants(args.variant, ests)
    if args.methods:
        ests = {k: ests[k] for k in args.methods.split(",")}
    ests.update(extra)
    bench = dict(cfg.benchmark_prediction.benchmarks)
    if args.benchmarks:
        bench = {k: bench[k] for k in args.benchmarks.split(",")}
    sizes = [int(s) for s in args.sizes.split(",")]
    splits = args.splits.split(",")
    out = {"trials": args.trials, "sizes": sizes, "splits": splits, "trials_per_split": args.trials_per_split,
           "load": os.getloadavg()[0], "per_benchmark": {}}
    with thread_limits(1):  # BLAS, OpenMP and torch: one thread each, as each harness worker
        for name, c in bench.items():
            res = instantiate(c)
            S = res.success.astype(np.float64)
            acc = np.nanmean(S, 1)
            times = {m: ([], []) for m in ests}  # (cold, warm) seconds per method
            err = {m: [] for m in ests}
            cover = {m: [] for m in ests}
            for split in splits:
                for t in range(args.trials):
                    # as in a harness worker: the methods and sizes of one (split, trial) share the
                    # per-source-split cache, so the first method to need a fit (p-IRT before gp-IRT)
                    # pays for it
                    base._CACHE.clear()
                    src, tgt = harness.model_split(acc, split, t, trials_per_split=args.trials_per_split)
                    for m, proto in ests.items():
                        for k, size in enumerate(s for s in sizes if s < S.shape[1]):
                            est = clone(proto).set_params(core_size=size, seed=t)
                            core = np.sort(np.random.default_rng(t).choice(S.shape[1], size, replace=False))
                            t0 = time.perf_counter()
                            est.fit(S[src], core_index=None if est.selects_core else core)
                            out_ = est.estimate(S[tgt][:, est.core_index_])
                            times[m][k > 0].append(time.perf_counter() - t0)
                            err[m].append(np.abs(out_.point - acc[tgt]).mean() * 100)
                            if out_.ci_low is not None:
                                cover[m] += list((out_.ci_low <= acc[tgt]) & (acc[tgt] <= out_.ci_high))
            row = {"shape": list(S.shape)}
            for m in ests:
                (cold, warm), e, cv = times[m], err[m], cover[m]
                row[m] = {"cold_s": round(float(np.mean(cold)), 4),
                          "warm_s": round(float(np.mean(warm)), 4) if warm else None,
                          "eg": round(float(np.mean(e)), 3), "eg_se": round(float(np.std(e) / np.sqrt(len(e))), 3),
                          "coverage": round(float(np.mean(cv)), 3) if cv else None, "n_intervals": len(cv)}
            out["per_benchmark"][name] = row
            print(json.dumps({name: row}), flush=True)
    # projected full harness: 2 splits x 4 sizes x 100 trials; interpolation has a new source
    # split every trials_per_split trials (cold once per split), extrapolation one split (cold once).
    proj, n_splits = {}, -(-100 // args.trials_per_split)
    for m in ests:
        tot = 0.0
        for name, row in out["per_benchmark"].items():
            c, w = row[m]["cold_s"], row[m]["warm_s"] or row[m]["cold_s"]
            tot += n_splits * c + (400 - n_splits) * w + (c + 399 * w)
        proj[m] = round(tot, 1)
    out["projected_full_harness_s_4_sizes_100_trials"] = proj
    # mean seconds per fit over that harness's fits (2 splits x 4 sizes x 100 trials per benchmark)
    out["mean_s_per_fit"] = {m: round(v / (800 * len(out["per_benchmark"])), 3) for m, v in proj.items()}
    out["load_end"] = os.getloadavg()[0]
    out["projected_total_s"] = round(sum(proj.values()), 1)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
