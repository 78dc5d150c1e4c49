"""Time and score single grid combinations on the real data (prints JSON, one object per combo).

Each ``--combo`` is a space-separated list of Hydra overrides on top of
``experiment=paper_in_distribution tracking=none``; the job is ``run_grid`` itself, so the
figures are what a sweep job costs (prepare, selection, generic fit) and what it scores.
``peak_rss_gb`` is the process's peak so far, so run a combination alone (or last) to read its own.
Used to compare classifier settings before changing ``conf/classifier/``, e.g.

    python benchmarks/grid_combo.py --combo "classifier=mlp selector.size=100" \
        --combo "classifier=mlp selector.size=100 classifier.estimator.hidden_sizes=[64]"
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--combo", action="append", required=True, help="space-separated overrides (repeatable)")
    ap.add_argument("--cache-dir", default=os.environ.get("ASSESSORS_CACHE_DIR", "/tmp/grid_combo/cache"))
    a = ap.parse_args()
    from hydra import compose, initialize_config_dir

    from assessors.tasks.grid import run_grid

    data_dir = os.environ.get("ASSESSORS_DATA_DIR", str(ROOT.parent / "shared" / "data"))
    base = [f"paths.data_dir={data_dir}", "paths.outputs=/tmp/grid_combo/outputs", f"paths.cache_dir={a.cache_dir}",
            "experiment=paper_in_distribution", "tracking=none"]
    rows = []
    for combo in a.combo:
        over = combo.split()
        with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
            cfg = compose(config_name="train", overrides=base + over)
        t0 = time.perf_counter()
        m = run_grid(cfg)
        row = {"combo": combo, "wall_s": round(time.perf_counter() - t0, 2),
               **{k: round(float(m[k]), 4) for k in ("time/prepare_s", "time/select_s", "time/fit_s",
                                                      "val_auc_mean", "test_auc_mean") if k in m},
               "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6, 2)}
        rows.append(row)
        print(json.dumps(row), flush=True)
    print(json.dumps({"combos": rows}))


if __name__ == "__main__":
    main()
