"""The per-LLM columns of ``python train.py`` with and without shared XGBoost bins; prints JSON.

Fits the "specific" and "reference only" columns of one seed through ``assessors.tasks.train.fit_per_llm``
(``llm_jobs`` LLMs at once, as ``train.py`` does), alternately with xgboost's own ``XGBClassifier`` as the
XGBoost candidate, each LLM's fit binning the prompts itself (before), and with the configured
:class:`~assessors.classifiers.binned_xgb.BinnedXGBClassifier`, whose bins the specific assessor sketches
once for all LLMs on the same prompts (after), in one process: wall and CPU time of each fit, the
largest difference between the two predictions and the mean test AUC; and the CPU time of building the
column's assessor from its config once per test LLM, as ``fit_per_llm`` did before it built it once per
column. On shared cores the times are ratios within one run.

    python benchmarks/specific_bins.py --seed 0 --repeats 2
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package and benchmarks

from omegaconf import open_dict  # noqa: E402

from assessors.metrics import per_llm_auc  # noqa: E402
from assessors.tasks import train  # noqa: E402
from assessors.threads import budgeted, fit_threads, thread_limits  # noqa: E402
from benchmarks.paper_column_candidates import seed_reference_set  # noqa: E402


def own_bins(cfg):
    """``cfg`` with xgboost's own ``XGBClassifier`` as the specific assessor's XGBoost: every LLM's fit bins
    the prompts itself."""
    cfg = cfg.copy()
    with open_dict(cfg):
        cfg.specific.classifiers.xgboost.estimator._target_ = "xgboost.XGBClassifier"
    return cfg


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--only", nargs="+", choices=("specific", "reference_only"), default=["specific", "reference_only"])
    ap.add_argument("overrides", nargs="*", help="Hydra overrides of train.yaml")
    a = ap.parse_args()
    out = {"seed": a.seed, "overrides": a.overrides, "load_1min_before": os.getloadavg()[0], "columns": {}}
    with thread_limits(fit_threads()):
        cfg, prep, ref_ids, ref_idx = seed_reference_set(a.seed, ("tracking=none", *a.overrides))
        S_te, X_ref, ref_pos = prep.S("test", "test"), prep.X["train"][ref_idx], prep.results.instance_index(ref_ids)
        for method in a.only:
            rows, preds = {"before": [], "after": []}, {}
            for _ in range(a.repeats):
                for label, c in (("before", own_bins(cfg)), ("after", cfg)):
                    t0, c0 = time.perf_counter(), time.process_time()
                    preds[label] = train.fit_per_llm(c, prep, method, X_ref, ref_pos)
                    rows[label].append((time.perf_counter() - t0, time.process_time() - c0))
            col = {label: {"wall_s": [round(w, 2) for w, _ in r], "cpu_s": [round(c, 2) for _, c in r],
                           "test_auc": round(float(np.nanmean(per_llm_auc(S_te, preds[label]))), 4)}
                   for label, r in rows.items()}
            col["cpu_ratio"] = round(sum(c for _, c in rows["after"]) / sum(c for _, c in rows["before"]), 3)
            col["wall_ratio"] = round(sum(w for w, _ in rows["after"]) / sum(w for w, _ in rows["before"]), 3)
            col["max_abs_diff"] = float(np.abs(preds["after"] - preds["before"]).max())
            out["columns"][method] = col
        c0 = time.process_time()
        for _ in prep.llms["test"]:
            train.instantiate(budgeted(cfg.specific, 1), n_jobs=1)
        out["instantiate_per_test_llm_cpu_s"] = round(time.process_time() - c0, 3)
    out["load_1min_after"] = os.getloadavg()[0]
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
