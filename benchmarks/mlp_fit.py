"""Fit time of the MLP head vs XGBoost (hist) on a generic-assessor-sized problem; prints JSON.

Rows mimic the generic assessor: (LLM, instance) pairs, features = [instance embedding (384),
LLM's reference success vector (100)] -> 484 columns; 50 LLMs x 3,600 instances = 180,000 rows.
Labels come from a known nonlinear logistic model so test AUC is meaningful (the oracle AUC is
reported). The MLP is timed twice: on the materialised float32 array and on a lazy row source
that builds each batch on demand (the streaming path); XGBoost on the array.

    python benchmarks/mlp_fit.py [--epochs 5] [--threads 2]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import time

import numpy as np
import torch
from sklearn.metrics import roc_auc_score

from assessors.irt_math import sigmoid


class PairRows:
    """Lazy rows: row r = [emb[r % n_inst], ref[r // n_inst]] (float32), built per batch."""

    def __init__(self, emb, ref):
        self.emb, self.ref = emb, ref
        self.shape = (len(ref) * len(emb), emb.shape[1] + ref.shape[1])

    def __len__(self):
        return self.shape[0]

    def __getitem__(self, idx):
        llm, inst = np.divmod(np.asarray(idx), len(self.emb))
        return np.concatenate([self.emb[inst], self.ref[llm]], axis=1)


def make_problem(seed=0, n_llms=50, n_inst=3600, d_emb=384, n_ref=100):
    rng = np.random.default_rng(seed)
    emb = rng.normal(size=(n_inst, d_emb)).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)  # unit vectors like MiniLM
    ability = rng.normal(size=n_llms)
    difficulty = emb @ rng.normal(size=d_emb) * 6
    ref = (rng.random((n_llms, n_ref)) < sigmoid(ability[:, None] + rng.normal(size=n_ref))).astype(np.float32)
    # success depends on ability (recoverable from ref) x difficulty (from emb), with an interaction
    logit = ability[:, None] - difficulty[None, :] + 0.5 * ability[:, None] * np.tanh(difficulty[None, :])
    y = (rng.random(logit.shape) < sigmoid(logit)).astype(np.float32).ravel()
    return PairRows(emb, ref), y, logit.ravel()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    from xgboost import XGBClassifier

    from assessors.classifiers.mlp import MLPClassifier

    rows, y, logit = make_problem()
    n = len(y)
    test = np.zeros(n, bool)
    test[np.random.default_rng(1).choice(n, 20000, replace=False)] = True
    train_idx, test_idx = np.flatnonzero(~test), np.flatnonzero(test)

    class Subset:  # row source over a subset of another row source: still lazy
        def __init__(self, src, idx):
            self.src, self.idx, self.shape = src, idx, (len(idx), src.shape[1])

        def __len__(self):
            return len(self.idx)

        def __getitem__(self, i):
            return self.src[self.idx[i]]

    Xtr_lazy = Subset(rows, train_idx)
    t = time.perf_counter()
    Xtr = rows[train_idx]
    Xte = rows[test_idx]
    t_mat = time.perf_counter() - t
    ytr, yte = y[train_idx], y[test_idx]
    out = {
        "rows_train": int(len(train_idx)), "rows_test": int(len(test_idx)), "features": int(rows.shape[1]),
        "threads": args.threads, "cpu_count": os.cpu_count(), "load_avg_start": os.getloadavg()[0],
        "torch": torch.__version__, "python": platform.python_version(),
        "materialise_s": round(t_mat, 2), "oracle_test_auc": round(roc_auc_score(yte, logit[test_idx]), 4),
    }
    kw = dict(max_epochs=args.epochs, num_threads=args.threads, validation_fraction=0.1, patience=3, seed=0)
    for name, X in (("mlp_array", Xtr), ("mlp_lazy_rows", Xtr_lazy)):
        t = time.perf_counter()
        m = MLPClassifier(**kw).fit(X, ytr)
        fit = time.perf_counter() - t
        t = time.perf_counter()
        p = m.predict_proba(Xte)[:, 1]
        out[name] = {"fit_s": round(fit, 2), "epochs": m.n_epochs_, "s_per_epoch": round(fit / max(m.n_epochs_, 1), 2),
                     "best_epoch": m.best_epoch_, "predict_s": round(time.perf_counter() - t, 3),
                     "test_auc": round(roc_auc_score(yte, p), 4)}
    t = time.perf_counter()
    xgb = XGBClassifier(tree_method="hist", n_jobs=args.threads, n_estimators=300, max_depth=6, learning_rate=0.1,
                        subsample=0.8, colsample_bytree=0.8, random_state=0).fit(Xtr, ytr)
    fit = time.perf_counter() - t
    out["xgboost_hist"] = {"fit_s": round(fit, 2), "n_estimators": 300, "max_depth": 6,
                           "test_auc": round(roc_auc_score(yte, xgb.predict_proba(Xte)[:, 1]), 4)}
    out["load_avg_end"] = os.getloadavg()[0]
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
