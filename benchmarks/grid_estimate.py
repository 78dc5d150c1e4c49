"""Whole-grid wall time, extrapolated from a sweep's *measured* grid runs (prints JSON).

Reads the finished grid runs of an MLflow experiment (each logs ``time/total_s`` and
``time/fit_s``), takes the mean cost per (instance features, classifier) at each measured
reference size, and fills in every combination of the full grid (3 features x 8 selectors x
4 classifiers x 4 sizes):

* a measured (features, classifier, size) cell uses its measured mean;
* otherwise the nearest measured size of the same (features, classifier) is scaled by row
  width (embedding: 384 + size, similarity: 2 x size, interaction: 3 x size), which assumes
  cost linear in width (true per iteration for lbfgs, liblinear and XGBoost's histograms;
  the MLP grows more slowly, so it is conservative there);
* a classifier never swept can be given from ``benchmarks/grid_combo.py`` output
  (``--combo-json``, an embedding combination), scaled the same way;
* selection cost is added once per (selector, size), as a sweep pays it once.

The serial total is divided by the sweep's measured parallel speed-up (sum of job times /
sweep wall time) rather than by the ideal ``n_jobs``: either over all runs (``--sweep-wall-s``,
the summed wall time of the sweeps that made them) or over the runs one sweep started between
two epoch times (``--sweep-window START END``), when the experiment holds runs of several sweeps.
A cell run more than once (after a config change) counts once, with its newest run, as in the
report (``assessors.grid.report.load_grid_runs``).

    python benchmarks/grid_estimate.py --db /work/gridrun/mlflow.db --sweep-wall-s 1800 \
        --combo-json /tmp/gc/b2.jsonl
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

FEATURES = ["embedding", "similarity", "similarity_interaction"]
CLASSIFIERS = ["logreg_l1", "logreg_l2", "xgboost", "mlp"]
SELECTORS = 8
SIZES = [30, 100, 300, 1000]
EMB_DIM = 384


def width(features: str, size: int) -> int:
    return {"embedding": EMB_DIM + size, "similarity": 2 * size, "similarity_interaction": 3 * size}[features]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", required=True)
    ap.add_argument("--experiment", default="paper_grid")
    ap.add_argument("--split", default="in_distribution")
    ap.add_argument("--sweep-wall-s", type=float, default=None, help="wall time of the measured sweep(s)")
    ap.add_argument("--sweep-window", type=float, nargs=2, default=None, metavar=("START", "END"),
                    help="epoch seconds of one sweep: speed-up from the runs it started")
    ap.add_argument("--combo-json", default=None, help="grid_combo.py output (JSON lines) for unswept classifiers")
    a = ap.parse_args()
    from assessors.grid.report import load_grid_runs
    from assessors.tracking import MlflowTracker

    # the report's own reader: one run per grid cell, the newest (a cell re-run after a config change)
    runs = load_grid_runs(MlflowTracker(None, a.db, str(Path(a.db).parent / "mlartifacts"), a.experiment,
                                        log_model=False))
    runs = runs[(runs["split"] == a.split) & runs["metrics.time/total_s"].notna()]
    job = runs["metrics.time/total_s"] - runs["metrics.time/select_s"]
    cells = job.groupby([runs["features"], runs["classifier"], runs["size"]]).mean()
    select = runs.groupby(["selector", "size"])["metrics.time/select_s"].max()
    extra = {}
    if a.combo_json:
        for line in Path(a.combo_json).read_text().splitlines():
            row = json.loads(line)
            if "combo" not in row:
                continue
            over = dict(o.split("=", 1) for o in row["combo"].split() if "=" in o and not o.startswith("+"))
            if len(over) == 2 and "classifier" in over and "selector.size" in over:  # plain embedding combos only
                extra[(over["classifier"], int(over["selector.size"]))] = row["wall_s"]
    total, filled, missing = 0.0, {"measured": 0, "scaled": 0, "from_combo_json": 0}, []
    per_classifier = dict.fromkeys(CLASSIFIERS, 0.0)
    for f in FEATURES:
        for c in CLASSIFIERS:
            measured = {s: cells[(f, c, s)] for s in SIZES if (f, c, s) in cells.index}
            for s in SIZES:
                if s in measured:
                    est, how = measured[s], "measured"
                elif measured:
                    near = min(measured, key=lambda m: abs(np.log(m / s)))
                    est, how = measured[near] * width(f, s) / width(f, near), "scaled"
                elif extra and any(k[0] == c for k in extra):
                    near = min((k[1] for k in extra if k[0] == c), key=lambda m: abs(np.log(m / s)))
                    est, how = extra[(c, near)] * width(f, s) / width("embedding", near), "from_combo_json"
                else:
                    missing.append((f, c, s))
                    continue
                filled[how] += SELECTORS
                total += SELECTORS * est
                per_classifier[c] += SELECTORS * est
    sel_total = float(sum(select.groupby(level=0).mean()) * len(SIZES))
    total += sel_total
    speedup = None
    if a.sweep_window:
        t0, t1 = a.sweep_window
        started = (runs["start_time"] - pd.Timestamp(0, tz="UTC")).dt.total_seconds()
        inside = runs[(started >= t0) & (started <= t1)]
        speedup = float(inside["metrics.time/total_s"].sum() / (t1 - t0))
    elif a.sweep_wall_s:
        speedup = float(runs["metrics.time/total_s"].sum() / a.sweep_wall_s)
    print(json.dumps({
        "measured_runs": len(runs), "measured_job_s_sum": round(float(runs["metrics.time/total_s"].sum()), 1),
        "cells_per_source": filled, "cells_missing": missing, "selection_s": round(sel_total, 1),
        "estimated_serial_s": round(total, 0),
        "estimated_serial_s_per_classifier": {k: round(v, 0) for k, v in per_classifier.items()},
        "measured_parallel_speedup": None if speedup is None else round(speedup, 2),
        "estimated_wall_s": None if speedup is None else round(total / speedup, 0),
        "n_combinations": len(FEATURES) * SELECTORS * len(CLASSIFIERS) * len(SIZES),
    }, indent=1))


if __name__ == "__main__":
    main()
