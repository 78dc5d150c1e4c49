"""The paper_generic column of ``python train.py`` with and without early stopping, on one seed.

Fits ``conf/classifier/xgboost_depth6.yaml`` (the column's classifier: early stopping on the validation
LLMs' log loss, 150 trees at most) and the same classifier without early stopping (all 150 trees), on
the seed's reference set, in one process, so the fit times are a ratio on shared cores. Prints the trees
kept, fit wall and CPU time, and mean validation and test AUC of each (JSON).

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


def main() -> None:
    a, out = seed_args(__doc__)
    threads = fit_threads()
    with thread_limits(threads):
        cfg, prep, ref_ids, ref_idx = seed_reference_set(a.seed)
        X_val, S_val, R_val = prep.validation(ref_ids)
        S_te, R_te = prep.S("test", "test"), prep.results.matrix(prep.llms["test"], ref_ids)
        for name, rounds in (("early_stopping", 10), ("all_trees", None)):
            OmegaConf.update(cfg, "paper_generic_classifier.estimator.early_stopping_rounds", rounds)
            paper = instantiate(budgeted(cfg.paper_generic, threads))
            t0, c0 = time.perf_counter(), time.process_time()
            paper.fit(prep.X["train"], prep.S("train", "train"), ref_idx, validation=(X_val, S_val, R_val))
            est = paper.classifier_
            out[name] = {
                "fit_s": round(time.perf_counter() - t0, 1), "fit_cpu_s": round(time.process_time() - c0, 1),
                "trees": int(getattr(est, "best_iteration", est.n_estimators - 1)) + 1,
                "val_auc": round(float(np.nanmean(per_llm_auc(S_val, paper.predict_proba(X_val, R_val)))), 4),
                "test_auc": round(float(np.nanmean(per_llm_auc(S_te, paper.predict_proba(prep.X["test"], R_te)))), 4)}
    out["load_1min_after"] = os.getloadavg()[0]
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
