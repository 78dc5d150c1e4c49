"""The baseline columns of ``python train.py`` on one seed, each timed as the task fits it; prints JSON.

Runs the columns the default run compares the configured assessor with (the paper's generic assessor,
"all train data", the specific assessors and "reference only") through ``assessors.tasks.train``'s own
functions, on the seed's data, split and reference set, in one process: wall and CPU time of each column
(a ratio on shared cores: compare columns within one run, or two trees run one after the other at the
same load) and its mean test AUC over the test LLMs. ``--profile N`` adds each column's N costliest
functions (cProfile, cumulative time).

    python benchmarks/baseline_columns.py --seed 0
    python benchmarks/baseline_columns.py --seed 0 --profile 15 --only paper_generic
    python benchmarks/baseline_columns.py --seed 0 --only specific reference_only llm_jobs=1
"""
from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package and benchmarks

from assessors.metrics import per_llm_auc  # noqa: E402
from assessors.tasks.prepare import fit_assessor  # noqa: E402
from assessors.tasks.train import all_train_data_assessor, fit_per_llm  # noqa: E402
from assessors.threads import fit_threads, thread_limits  # noqa: E402
from benchmarks.paper_column_candidates import seed_reference_set  # noqa: E402

COLUMNS = ("paper_generic", "all_train_data", "specific", "reference_only")


def column(name: str, cfg, prep, ref_ids, ref_idx) -> tuple[np.ndarray, dict]:
    """Test P(success) (n_test_llms, n_test) of one column, fitted as ``train.py`` fits it, and what its
    validation chose (a generic assessor's classifier and its trees)."""
    X_te, R_te = prep.X["test"], prep.results.matrix(prep.llms["test"], ref_ids)
    if name == "paper_generic":
        model = fit_assessor(cfg, prep, ref_idx, ref_ids, assessor_cfg=cfg.paper_generic)
        return model.predict_proba(X_te, R_te), chosen(model)
    if name == "all_train_data":
        base = all_train_data_assessor(cfg, fit_threads(threads=cfg.get("threads")))
        val = (prep.X["val"], prep.S("val", "val"), np.zeros((len(prep.llms["val"]), 0), np.float32))
        base.fit(prep.X["train"], prep.S("train", "train"), np.array([], dtype=int), validation=val)
        return base.predict_proba(X_te, np.zeros((len(prep.llms["test"]), 0), np.float32)), chosen(base)
    X_ref = prep.X["train"][ref_idx]
    return fit_per_llm(cfg, prep, name, X_ref, prep.results.instance_index(ref_ids)), {}


def chosen(model) -> dict:
    """The classifier a generic assessor kept on its validation LLMs and the trees it has."""
    est = model.classifier_
    best = getattr(est, "best_iteration", None)
    return {"kept": model.classifier_name_,
            "trees": int(best) + 1 if best is not None else est.get_params().get("n_estimators")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", nargs="+", choices=COLUMNS, default=list(COLUMNS))
    ap.add_argument("--profile", type=int, default=0, help="print each column's N costliest functions")
    ap.add_argument("overrides", nargs="*", help="Hydra overrides of train.yaml")
    a = ap.parse_args()
    out = {"seed": a.seed, "overrides": a.overrides, "load_1min_before": os.getloadavg()[0], "columns": {}}
    with thread_limits(fit_threads()):
        cfg, prep, ref_ids, ref_idx = seed_reference_set(a.seed, ("tracking=none", *a.overrides))
        S_te = prep.S("test", "test")
        for name in a.only:
            prof = cProfile.Profile() if a.profile else None
            t0, c0 = time.perf_counter(), time.process_time()
            if prof:
                prof.enable()
            P, info = column(name, cfg, prep, ref_ids, ref_idx)
            if prof:
                prof.disable()
            row = {"wall_s": round(time.perf_counter() - t0, 2), "cpu_s": round(time.process_time() - c0, 2),
                   "test_auc": round(float(np.nanmean(per_llm_auc(S_te, P))), 4), **info}
            out["columns"][name] = row
            if prof:
                buf = io.StringIO()
                pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(a.profile)
                print(f"== {name}\n{buf.getvalue()}", file=sys.stderr)
    out["total_wall_s"] = round(sum(c["wall_s"] for c in out["columns"].values()), 2)
    out["load_1min_after"] = os.getloadavg()[0]
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
