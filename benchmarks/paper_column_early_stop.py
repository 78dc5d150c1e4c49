"""The paper_generic column of ``python train.py`` with and without early stopping, on one seed.

Fits ``conf/classifier/xgboost_depth6.yaml`` (the column's classifier: early stopping on the validation
LLMs' log loss, 150 trees at most) and the same classifier without early stopping (all 150 trees), on
the seed's reference set, in one process, so the fit times are a ratio on shared cores. Prints the trees
kept, fit wall and CPU time, mean validation and test AUC and test Brier score of each (JSON).

    python benchmarks/paper_column_early_stop.py --seed 0
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np
from hydra.utils import instantiate
from omegaconf import OmegaConf

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package and benchmarks

from assessors.metrics import per_llm_auc  # noqa: E402
from assessors.threads import budgeted, fit_threads, thread_limits  # noqa: E402
from benchmarks.paper_column_candidates import seed_args, seed_reference_set  # noqa: E402


def compare_column(doc: str, key: str, variants: dict, rounds: int = 1) -> None:
    """Fit the column on ``--seed``'s reference set with config ``key`` set to each of ``variants``
    (``{name: value}``), ``rounds`` times in turn; print each fit's wall and CPU time, trees kept, mean
    validation and test AUC and test Brier score (JSON, a list of rounds per name)."""
    a, out = seed_args(doc)
    threads = fit_threads()
    with thread_limits(threads):
        cfg, prep, ref_ids, ref_idx = seed_reference_set(a.seed)
        X_val, S_val, R_val = prep.validation(ref_ids)
        S_te, R_te = prep.S("test", "test"), prep.results.matrix(prep.llms["test"], ref_ids)
        answered = ~np.isnan(S_te)
        for name in [*variants] * rounds:
            OmegaConf.update(cfg, key, variants[name])
            paper = instantiate(budgeted(cfg.paper_generic, threads))
            t0, c0 = time.perf_counter(), time.process_time()
            paper.fit(prep.X["train"], prep.S("train", "train"), ref_idx, validation=(X_val, S_val, R_val))
            est, P = paper.classifier_, paper.predict_proba(prep.X["test"], R_te)
            out.setdefault(name, []).append({
                "fit_s": round(time.perf_counter() - t0, 1), "fit_cpu_s": round(time.process_time() - c0, 1),
                "trees": int(getattr(est, "best_iteration", est.n_estimators - 1)) + 1,
                "val_auc": round(float(np.nanmean(per_llm_auc(S_val, paper.predict_proba(X_val, R_val)))), 4),
                "test_auc": round(float(np.nanmean(per_llm_auc(S_te, P))), 4),
                "test_brier": round(float(np.mean((P[answered] - S_te[answered]) ** 2)), 4)})
    out["load_1min_after"] = os.getloadavg()[0]
    print(json.dumps(out, indent=1))


def main() -> None:
    compare_column(__doc__, "paper_generic_classifier.estimator.early_stopping_rounds",
                   {"early_stopping": 10, "all_trees": None})


if __name__ == "__main__":
    main()
