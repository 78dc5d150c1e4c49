"""Logistic-regression fit time per C on the grid's generic-assessor rows (prints JSON lines).

Builds the rows a grid job fits at ``--size`` (embedding mode: MiniLM embedding + reference
vector, ~177k training pairs x 484 columns at size 100, random reference set) and fits
sklearn's LogisticRegression for each C and tol, on raw and on standardised features.
Reports fit seconds, solver iterations and the pooled AUC on validation LLMs x validation
instances. Used to pick ``tol`` for L2 (lbfgs) and to see where L1 (liblinear) spends its time.

    python benchmarks/logreg_solver.py --penalty l2 --C 0.001 0.01 0.1 1 10 --tol 1e-4 1e-3
    python benchmarks/logreg_solver.py --penalty l1 --C 0.01 0.1 1 10 --tol 1e-3
"""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--penalty", choices=["l1", "l2"], default="l2")
    ap.add_argument("--C", type=float, nargs="+", default=[0.001, 0.01, 0.1, 1.0, 10.0])
    ap.add_argument("--tol", type=float, nargs="+", default=[1e-4, 1e-3])
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--scalings", nargs="+", choices=["raw", "scaled"], default=["raw", "scaled"])
    ap.add_argument("--cache-dir", default=os.environ.get("ASSESSORS_CACHE_DIR", "/tmp/logreg_solver/cache"))
    a = ap.parse_args()
    from hydra import compose, initialize_config_dir
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    from sklearn.preprocessing import StandardScaler

    from assessors.core.generic import GenericAssessor
    from assessors.tasks.prepare import prepare
    from paper_column_candidates import answered, row_builder

    data_dir = os.environ.get("ASSESSORS_DATA_DIR", str(ROOT.parent / "shared" / "data"))
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose(config_name="train", overrides=[f"paths.data_dir={data_dir}", f"paths.cache_dir={a.cache_dir}",
                                                      "experiment=paper_in_distribution", "tracking=none"])
    prep = prepare(cfg)
    S, X = prep.S("train", "train"), prep.X["train"]
    ref = np.random.default_rng(0).choice(X.shape[0], a.size, replace=False)
    g = row_builder(GenericAssessor(classifier=None), X, S, ref)
    keep = np.setdiff1d(np.arange(X.shape[0]), ref)
    R_val = prep.results.matrix(prep.llms["val"], [prep.inst["train"][i] for i in ref])
    A, y = answered(g.pair_rows(X[keep], S[:, ref]).to_array(), S[:, keep])
    A_val, y_val = answered(g.pair_rows(prep.X["val"], R_val).to_array(), prep.S("val", "val"))
    print(json.dumps({"rows": A.shape[0], "columns": A.shape[1]}), flush=True)
    solver = {"l1": dict(l1_ratio=1.0, solver="liblinear"), "l2": dict(l1_ratio=0.0, solver="lbfgs")}[a.penalty]
    for scaling in a.scalings:
        sc = StandardScaler().fit(A) if scaling == "scaled" else None
        At, Avt = (A, A_val) if sc is None else (sc.transform(A).astype(np.float32), sc.transform(A_val).astype(np.float32))
        for C in a.C:
            for tol in a.tol:
                t0 = time.perf_counter()
                m = LogisticRegression(C=C, tol=tol, max_iter=1000, **solver).fit(At, y)
                print(json.dumps({"penalty": a.penalty, "features": scaling, "C": C, "tol": tol,
                                  "fit_s": round(time.perf_counter() - t0, 1), "iterations": int(np.max(m.n_iter_)),
                                  "val_auc_pooled": round(float(roc_auc_score(y_val, m.predict_proba(Avt)[:, 1])), 4)}),
                      flush=True)


if __name__ == "__main__":
    main()
