"""XGBoost on the "all train data" baseline's shape (7,132 weighted rows x 384, its collapsed rows on the
default run) with 1 and 2 threads: wall and CPU seconds of each fit, and whether the predictions agree;
prints JSON.

Data is Gaussian with a planted signal: this times the fit, it says nothing about AUC. Fits alternate
(2, 1, 2, 1 threads) so that a change of load hits both; on shared cores compare the ratios.

    python benchmarks/small_fit_threads.py
"""
from __future__ import annotations

import json
import os
import time

import numpy as np
import xgboost as xgb


def main() -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(7132, 384)).astype(np.float32)
    y = (X[:, :5].sum(1) + rng.normal(size=len(X)) > 0).astype(int)
    w = rng.integers(1, 49, size=len(X)).astype(np.float32)
    out: dict = {"load_1min_before": os.getloadavg()[0]}
    preds = {}
    for n_jobs in (2, 1, 2, 1):
        m = xgb.XGBClassifier(tree_method="hist", n_estimators=150, max_depth=3, learning_rate=0.1, subsample=1.0,
                              colsample_bytree=0.8, max_bin=64, n_jobs=n_jobs, random_state=0)
        t0, c0 = time.perf_counter(), time.process_time()
        m.fit(X, y, sample_weight=w)
        out.setdefault(f"threads{n_jobs}_wall_cpu_s", []).append(
            [round(time.perf_counter() - t0, 2), round(time.process_time() - c0, 2)])
        preds[n_jobs] = m.predict_proba(X)[:, 1]
    out["max_abs_prediction_difference"] = float(np.abs(preds[1] - preds[2]).max())
    out["load_1min_after"] = os.getloadavg()[0]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
