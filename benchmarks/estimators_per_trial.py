"""Per-trial CPU time and error of each benchmark estimator on the real score matrices; prints JSON.

A trial = fit on the source LLMs + estimate for all target LLMs, one split, every size. As in a harness
worker, the per-source-split cache (IRT and latent item fits, item correlations, and the anchors and
medoids of a fixed ``core_seed``) is kept across the methods, sizes and trials of one source split and
cleared when the split changes (``--trials-per-split`` interpolation trials share one; extrapolation has
one split). The first trial of a split (cold) pays that work, the later ones (warm) reuse it; we time
both in CPU seconds of this one-thread process (on a shared machine wall time follows the load), per
fit (the mean over the sizes of a trial), and report each method's error (EG: mean absolute
error in accuracy points over targets, trials, sizes) and, for methods with intervals, their coverage
of the true accuracy.

    python benchmarks/estimators_per_trial.py [--trials 2] [--benchmarks rte,qnli] [--methods aipw,pca]
        [--splits interpolation,extrapolation] [--variant NAME=METHOD:param=value,...] [--trials-per-split 10]
        [--estimator aipw_assessor]

``--variant`` adds a copy of METHOD with other parameters (e.g. the reference implementation's
settings), timed in the same run so that ratios compare like with like under the same load:
``--variant anchor_full=anchor_points_weighted:max_items=null``.

The projection to the full harness (100 trials x 4 sizes per split kind and benchmark): for each
split kind, ``n_s`` cold trials (``ceil(100 / trials_per_split)`` interpolation splits; for
extrapolation's one split, one per harness job of ``trial_block`` trials, whose process starts with an
empty cache) at the cold per-fit time and ``100 - n_s`` at the warm one, times 4 sizes; a split kind
not measured is projected from the times of the one measured. Run a multiple of
``--trials-per-split`` trials so that cold and warm trials are in the harness's proportion.

``--fit-cache DIR`` keeps the source-only fits on disk as the harness's ``fit_cache_dir`` does, and times
each split's first trial a second time from an empty process cache (disk: the fits are loaded, not
fitted), as a later harness job on the same split runs it. The projection with the disk cache
(``projected_total_s_fit_cache``) then counts extrapolation's one split cold once and at the disk time in
each later job; interpolation is unchanged (each split is in one job).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import yaml
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate
from sklearn.base import clone

from assessors.estimation import harness
from assessors.estimation.benchmark import base
from assessors.estimation.benchmark.fit_cache import disk_cache
from assessors.threads import thread_limits


def _variants(specs: list[str], ests: dict) -> dict:
    """Extra estimators from ``NAME=METHOD:param=value,...`` specs (values parsed as YAML; a
    dotted param such as ``proxy.assessor.classifier.estimator.n_estimators`` sets a nested attribute)."""
    out = {}
    for spec in specs:
        name, rest = spec.split("=", 1)
        method, _, params = rest.partition(":")
        # commas inside [...] or {...} belong to a YAML value, not between parameters
        kv = dict(p.split("=", 1) for p in re.split(r",(?![^\[{]*[\]}])", params) if p)
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
    ap.add_argument("--estimator", action="append", default=[],
                    help="a conf/estimator/ option the preset does not run, added under its own name")
    ap.add_argument("--trials-per-split", type=int, default=1,
                    help="interpolation trials sharing one model split (benchmark_prediction.trials_per_split)")
    ap.add_argument("--fit-cache", default=None, help="a folder for the source-only fits (fit_cache_dir)")
    args = ap.parse_args()
    conf = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "conf")
    with initialize_config_dir(config_dir=os.path.abspath(conf), version_base=None):
        cfg = compose("train", overrides=["experiment=benchmark_prediction", "seed=0", "features=success_pattern"]
                      + [f"+estimator@estimators.{e}={e}" for e in args.estimator])
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
           "trial_block": int(cfg.benchmark_prediction.trial_block),
           "load": os.getloadavg()[0], "per_benchmark": {}}
    block = int(cfg.benchmark_prediction.trial_block)
    import torch  # the first optimiser imports torch._dynamo (about 3 CPU-s, once per harness worker):
    torch.optim.LBFGS([torch.zeros(1, requires_grad=True)])  # paid here, not in the first benchmark's cold fit
    with thread_limits(1), disk_cache(args.fit_cache):  # one BLAS/OpenMP/torch thread, as each harness worker
        for name, c in bench.items():
            res = instantiate(c)
            S = res.success.astype(np.float64)
            acc = np.nanmean(S, 1)
            times = {sp: {m: ([], [], []) for m in ests} for sp in splits}  # (cold, warm, disk) seconds per fit
            err = {m: [] for m in ests}
            cover = {m: [] for m in ests}
            run_sizes = [s for s in sizes if s < S.shape[1]]
            for split in splits:
                # a harness job runs trial_block trials in one process: extrapolation's one split is
                # refitted once per block
                tps = args.trials_per_split if split == "interpolation" else block
                for t in range(args.trials):
                    if t % tps == 0:  # a new source split: a new harness worker's cache, as in the harness
                        base._CACHE.clear()
                    src, tgt = harness.model_split(acc, split, t, trials_per_split=args.trials_per_split)
                    unit = harness.split_rows(S, list(res.llms), src, tgt)  # as a harness worker takes them
                    # a split's first trial again from an empty process cache: a later job loading the disk
                    again = args.fit_cache is not None and t % tps == 0
                    for kind in ((0, 2) if again else (int(t % tps > 0),)):
                        if kind == 2:  # every method again, as a later job runs them: fits shared in memory
                            base._CACHE.clear()
                        for m, proto in ests.items():
                            spent = 0.0
                            for size in run_sizes:
                                est = clone(proto).set_params(core_size=size, seed=t)
                                core = np.sort(np.random.default_rng(t).choice(S.shape[1], size, replace=False))
                                t0 = time.process_time()
                                est.fit(unit["source"], core_index=None if est.selects_core else core)
                                out_ = est.estimate(unit["target"][:, est.core_index_])
                                spent += time.process_time() - t0
                                if kind == 2:
                                    continue
                                err[m].append(np.abs(out_.point - acc[tgt]).mean() * 100)
                                if out_.ci_low is not None:
                                    cover[m] += list((out_.ci_low <= acc[tgt]) & (acc[tgt] <= out_.ci_high))
                            times[split][m][kind].append(spent / len(run_sizes))
            row = {"shape": list(S.shape)}
            for m in ests:
                e, cv = err[m], cover[m]
                row[m] = {"eg": round(float(np.mean(e)), 3), "eg_se": round(float(np.std(e) / np.sqrt(len(e))), 3),
                          "coverage": round(float(np.mean(cv)), 3) if cv else None, "n_intervals": len(cv)}
                for sp in splits:
                    cold, warm, disk = times[sp][m]
                    row[m][sp] = {"cold_s": round(float(np.mean(cold)), 4),
                                  "warm_s": round(float(np.mean(warm)), 4) if warm else None,
                                  "disk_s": round(float(np.mean(disk)), 4) if disk else None}
            out["per_benchmark"][name] = row
            print(json.dumps({name: row}), flush=True)
    proj = _projection(out["per_benchmark"], ests, splits, args.trials_per_split, block, False)
    out["projected_full_harness_s_4_sizes_100_trials"] = proj
    if args.fit_cache is not None:
        cached_proj = _projection(out["per_benchmark"], ests, splits, args.trials_per_split, block, True)
        out["projected_full_harness_s_fit_cache"] = cached_proj
        out["projected_total_s_fit_cache"] = round(sum(cached_proj.values()), 1)
    # mean seconds per fit over that harness's fits (2 splits x 4 sizes x 100 trials per benchmark)
    out["mean_s_per_fit"] = {m: round(v / (800 * len(out["per_benchmark"])), 3) for m, v in proj.items()}
    out["load_end"] = os.getloadavg()[0]
    out["projected_total_s"] = round(sum(proj.values()), 1)
    print(json.dumps(out, indent=1))


def _projection(per_benchmark: dict, ests, splits, per_split: int, block: int, fit_cache: bool) -> dict:
    """Seconds per method for 100 trials x 4 sizes per split kind and benchmark (module docstring):
    without ``fit_cache``, each harness job pays its splits' fits; with it, extrapolation's one split is
    fitted by the first job and loaded (the disk time) by the others."""
    proj = {}
    for m in ests:
        tot = 0.0
        for row in per_benchmark.values():
            for sp in ("interpolation", "extrapolation"):
                t_ = row[m].get(sp) or row[m][splits[0]]
                c, w = t_["cold_s"], t_["warm_s"] if t_["warm_s"] is not None else t_["cold_s"]
                n_s = -(-100 // (per_split if sp == "interpolation" else block))
                n_disk = n_s - 1 if fit_cache and sp == "extrapolation" else 0
                tot += 4 * ((n_s - n_disk) * c + n_disk * t_["disk_s"] + (100 - n_s) * w)
        proj[m] = round(tot, 1)
    return proj


if __name__ == "__main__":
    main()
