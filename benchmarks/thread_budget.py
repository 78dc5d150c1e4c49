"""Thread oversubscription: per-LLM XGBoost fits, 2 at a time, with and without the thread budget.

Real data: the specific assessor's task on Open LLM Leaderboard v2 (the default BBH+MuSR, 6,517
prompts): for each of 8 test LLMs, an XGBoost fit (the default grid point: 150 trees, depth 3,
64 bins) on the success pattern of 60 training LLMs. Two layouts, each run with the old fixed thread count
(``n_jobs=2`` per fit, the former conf/classifier/xgboost.yaml) and with the budget of
:mod:`assessors.threads`:

* ``threads``: 2 fits at once in worker threads of one process (``llm_jobs=2``);
* ``processes``: 2 fits at once in 2 worker processes (a joblib sweep with ``n_jobs=2``).

Prints JSON with seconds per layout and the ratio old/budget (within one run: the machine is
shared and noisy, so compare ratios, not seconds)::

    ASSESSORS_DATA_DIR=/work/shared/data nice python benchmarks/thread_budget.py
"""
from __future__ import annotations

import json
import os
import time

import numpy as np

REPEATS = 5


def _data(n_train: int = 60, n_test: int = 8):
    from assessors.data.loaders.open_llm_leaderboard_v2 import load_open_llm_leaderboard_v2

    res = load_open_llm_leaderboard_v2(root=os.environ.get("ASSESSORS_DATA_DIR"), prompts=False)
    rng = np.random.default_rng(0)
    order = rng.permutation(len(res.llms))
    S = np.nan_to_num(res.success, nan=0.5)
    X = S[order[:n_train]].T.astype(np.float32)  # instances x training LLMs
    Y = (res.success[order[n_train:n_train + n_test]] == 1).astype(int)
    return X, Y


def _fit(X, y, n_jobs: int) -> float:
    import xgboost as xgb

    m = xgb.XGBClassifier(tree_method="hist", n_estimators=150, max_depth=3, learning_rate=0.1, subsample=0.8,
                          colsample_bytree=0.8, max_bin=64, n_jobs=n_jobs, random_state=0)
    m.fit(X, y)
    return float(m.predict_proba(X[:5])[:, 1].sum())


def _layout(X, Y, backend: str, n_jobs_per_fit: int) -> float:
    from joblib import Parallel, delayed

    t0 = time.perf_counter()
    Parallel(n_jobs=2, backend=backend)(delayed(_fit)(X, y, n_jobs_per_fit) for y in Y)
    return time.perf_counter() - t0


def main() -> None:
    from assessors.threads import available_cores, fit_threads

    X, Y = _data()
    budget = fit_threads(2)  # two fits at once in this process's cores
    out = {"cores": available_cores(), "fits": len(Y), "shape": list(X.shape), "old_threads_per_fit": 2,
           "budget_threads_per_fit": budget}
    _layout(X, Y[:2], "threading", budget)  # warm-up: imports, OpenMP pools
    for backend, name in (("threading", "threads"), ("loky", "processes")):
        # interleaved repeats: a burst of load from other users hits both variants alike
        old, new = [], []
        for _ in range(REPEATS):
            old.append(_layout(X, Y, backend, 2))
            new.append(_layout(X, Y, backend, budget))
        out[f"{name}_old_s"] = [round(t, 2) for t in old]
        out[f"{name}_budget_s"] = [round(t, 2) for t in new]
        out[f"{name}_ratio_old_over_budget_median"] = round(float(np.median(old) / np.median(new)), 2)
        out[f"{name}_ratio_old_over_budget_min"] = round(min(old) / min(new), 2)
    out["load_average_1min"] = round(os.getloadavg()[0], 1)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
