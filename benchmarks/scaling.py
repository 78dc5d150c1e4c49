"""Cost growth of one grid job as training LLMs and instances double (prints JSON).

Each point runs in a fresh subprocess (so peak RSS is its own) on synthetic data drawn from a
10-dimensional 2PL model with 64-dim instance features: reference selection by each of
kmeans_irt (IRT fit + KMeans), factor_analysis_successes and random_best_of_n (N=5), then
one generic-assessor fit (L2 logistic regression, one C) with size-100 reference sets.
Reports seconds per stage and peak RSS, and the growth ratio per doubling (2.0 = linear).

Usage: python benchmarks/scaling.py [--llms 12 25 50] [--instances 1000 2000 4000]
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time


def point(n_llms: int, n_inst: int, size: int) -> dict:
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    from assessors.classifiers.grid import ParamGrid
    from assessors.core.generic import GenericAssessor
    from assessors.irt_math import sigmoid
    from assessors.selection.factor_analysis import FactorAnalysisSelector
    from assessors.selection.feature_spaces import IRTSpace, SuccessSpace
    from assessors.selection.kmeans import KMeansSelector

    rng = np.random.default_rng(0)
    th, a, b = rng.normal(size=(n_llms, 10)), rng.normal(0, 0.5, (n_inst, 10)), rng.normal(size=n_inst)
    S = (rng.random((n_llms, n_inst)) < sigmoid(th @ a.T - b)).astype(np.float32)
    X = np.hstack([a, b[:, None], rng.normal(size=(n_inst, 53))]).astype(np.float32)
    ids = [str(i) for i in range(n_inst)]
    out = {"n_llms": n_llms, "n_instances": n_inst}
    t = time.perf_counter()
    Z = IRTSpace(dims=10).transform(S, None)
    out["irt_fit_s"] = time.perf_counter() - t
    t = time.perf_counter()
    KMeansSelector(size=size, space=type("Fixed", (SuccessSpace,), {"transform": lambda self, s, f: Z})()).fit(S, ids, X)
    out["kmeans_s"] = time.perf_counter() - t
    t = time.perf_counter()
    sel = FactorAnalysisSelector(size=size, space=SuccessSpace()).fit(S, ids, X)
    out["factor_analysis_s"] = time.perf_counter() - t
    t = time.perf_counter()
    gen = GenericAssessor(ParamGrid(LogisticRegression(max_iter=300), None))
    gen.fit(X, S, sel.reference_index_)
    out["generic_fit_s"] = time.perf_counter() - t
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--llms", type=int, nargs="+", default=[12, 25, 50])
    ap.add_argument("--instances", type=int, nargs="+", default=[1000, 2000, 4000])
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--child", nargs=2, type=int, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(point(*a.child, a.size)))
        return
    rows = []
    grid = [(n, a.instances[0]) for n in a.llms] + [(a.llms[-1], m) for m in a.instances[1:]]
    for n, m in grid:
        r = subprocess.run([sys.executable, __file__, "--child", str(n), str(m), "--size", str(a.size)],
                           capture_output=True, text=True, check=True)
        rows.append(json.loads(r.stdout.strip().splitlines()[-1]))
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    keys = ["irt_fit_s", "kmeans_s", "factor_analysis_s", "generic_fit_s", "peak_rss_mb"]

    def ratios(sub):
        return {k: [round(sub[i + 1][k] / max(sub[i][k], 1e-9), 2) for i in range(len(sub) - 1)] for k in keys}

    by_llms = [r for r in rows if r["n_instances"] == a.instances[0]]
    by_inst = [r for r in rows if r["n_llms"] == a.llms[-1]]
    print(json.dumps({"points": rows, "growth_per_llm_doubling": ratios(by_llms),
                      "growth_per_instance_doubling": ratios(by_inst),
                      "note": "ratio 2.0 = linear; memory ratios include the ~constant interpreter baseline"}, indent=1))


if __name__ == "__main__":
    main()
