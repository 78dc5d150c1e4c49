"""Time one subgroup-harness repeat (DT + cross-fitted SR + EB with robust intervals) at the size of
BBH+MuSR (78 LLMs x 27 subgroups) on synthetic counts; prints JSON.

    python benchmarks/subgroup_eb_repeat_time.py [--repeats 5] [--param-grid]
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np

from assessors.estimation.subgroup.direct import DirectEstimator
from assessors.estimation.subgroup.empirical_bayes import EmpiricalBayes
from assessors.estimation.subgroup.regression import SyntheticRegression
from assessors.irt_math import sigmoid


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--param-grid", action="store_true", help="tune XGBoost by CV (4 combinations)")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    n_llms, G, d = 78, 27, 384
    x = rng.normal(size=(G, d))
    theta = sigmoid(rng.normal(size=(n_llms, 1)) + x[:, :1].T + rng.normal(0, 0.5, (n_llms, G)))
    trials = np.full((n_llms, G), 15.0)
    grid = {"max_depth": [2, 4], "n_estimators": [100, 300]} if args.param_grid else None
    eb = EmpiricalBayes(regressor=SyntheticRegression(param_grid=grid))
    EmpiricalBayes(regressor=SyntheticRegression(xgb_params={"n_estimators": 5})).fit(
        rng.binomial(15, theta), trials, x)  # warm the cva table cache
    times = []
    for _ in range(args.repeats):
        k = rng.binomial(15, theta).astype(float)
        t = time.perf_counter()
        DirectEstimator().fit(k, trials)
        eb.fit(k, trials, x)
        times.append(time.perf_counter() - t)
    print(json.dumps({"benchmark": "subgroup_eb_repeat", "n_llms": n_llms, "n_subgroups": G,
                      "param_grid": bool(grid), "repeats": args.repeats,
                      "seconds_per_repeat_median": float(np.median(times)),
                      "seconds_per_repeat_min": float(np.min(times))}))


if __name__ == "__main__":
    main()
