"""XGBoost fit time by max_bin on the specific assessor's shape (3,650 x 384); prints JSON.

Data is Gaussian with a planted signal: this times the fit, it says nothing about AUC.

    python benchmarks/xgb_max_bin.py
"""
from __future__ import annotations

import json
import time

import numpy as np
import xgboost as xgb


def main() -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3650, 384)).astype(np.float32)
    y = (X[:, :5].sum(1) + rng.normal(size=3650) > 0).astype(int)
    out = {}
    for n_jobs in (1, 2):
        for depth in (3, 6):
            for max_bin in (256, 64):
                m = xgb.XGBClassifier(tree_method="hist", n_estimators=150, max_depth=depth, learning_rate=0.1,
                                      subsample=0.8, colsample_bytree=0.8, max_bin=max_bin, n_jobs=n_jobs)
                t0 = time.perf_counter()
                m.fit(X, y)
                out[f"n_jobs{n_jobs}_depth{depth}_bins{max_bin}_s"] = round(time.perf_counter() - t0, 3)
            out[f"n_jobs{n_jobs}_depth{depth}_speedup_64_vs_256"] = round(
                out[f"n_jobs{n_jobs}_depth{depth}_bins256_s"] / out[f"n_jobs{n_jobs}_depth{depth}_bins64_s"], 2)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
