"""Time the multidimensional 2PL IRT fit on 50 LLMs x 4,000 instances (budget: 60 s); prints JSON.

    python benchmarks/irt_fit.py [--llms 50] [--items 4000] [--dims 10] [--repeats 3]
"""
from __future__ import annotations

import argparse
import json
import resource
import time

import numpy as np
from scipy.stats import spearmanr

from assessors.irt_math import sigmoid
from assessors.selection.irt import MultidimIRT


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--llms", type=int, default=50)
    ap.add_argument("--items", type=int, default=4000)
    ap.add_argument("--dims", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    th = rng.normal(size=(a.llms, a.dims))
    disc = rng.normal(0, 0.4, size=(a.items, a.dims))
    b = rng.normal(0, 1.5, size=a.items)
    S = (rng.random((a.llms, a.items)) < sigmoid(th @ disc.T - b)).astype(np.float32)
    S[rng.random(S.shape) < 0.02] = np.nan
    times, rhos = [], []
    for r in range(a.repeats):
        t0 = time.perf_counter()
        irt = MultidimIRT(dims=a.dims, seed=r).fit(S)
        times.append(time.perf_counter() - t0)
        rhos.append(spearmanr(irt.difficulty_, b)[0])
    t0 = time.perf_counter()
    irt.ability_for(S[:10, :100], np.arange(100))
    print(json.dumps({"llms": a.llms, "items": a.items, "dims": a.dims, "fit_s": [round(t, 3) for t in times],
                      "fit_s_median": round(float(np.median(times)), 3), "budget_s": 60,
                      "within_budget": bool(np.median(times) <= 60), "n_iter": irt.n_iter_,
                      "spearman_difficulty": [round(float(x), 4) for x in rhos],
                      "ability_for_10x100_s": round(time.perf_counter() - t0, 4),
                      "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}))


if __name__ == "__main__":
    main()
