"""Estimate the wall time of the whole in-distribution grid on BBH+MuSR (prints JSON).

Running all 384 combinations (3 instance-feature modes x 8 selectors x 4 classifier grids x
4 sizes) is not possible on a shared 2-core machine within a session, so this times a
representative subset with ``run_grid`` (tracking off) and extrapolates:

* selection cost per selector (paid once per sweep thanks to the disk memo; sizes differ);
* generic-assessor fit cost per classifier grid at each measured size, with the
  ``embedding`` mode; other modes are scaled by their row width relative to it;
* total = sum over combinations of (prepare + fit), + selection once per (selector, size),
  divided by ``n_jobs`` (ideal joblib parallelism; contention makes it worse).

Usage: python benchmarks/grid_time.py [--features minilm] [--sizes 30 300] [--budget-s 2400]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLASSIFIERS = ["logreg_l1", "logreg_l2", "xgboost", "mlp"]
SELECTORS = ["random", "random_best_of_n", "kmeans_embeddings", "kmeans_successes", "kmeans_irt",
             "factor_analysis_embeddings", "factor_analysis_successes", "factor_analysis_irt"]
SIZES = [30, 100, 300, 1000]


def compose(overrides):
    from hydra import compose as hc
    from hydra import initialize_config_dir

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        return hc(config_name="train", overrides=overrides)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--features", default="success_pattern")
    ap.add_argument("--sizes", type=int, nargs="+", default=[30, 300])
    ap.add_argument("--classifiers", nargs="+", default=CLASSIFIERS)
    ap.add_argument("--selectors", nargs="+", default=SELECTORS)
    ap.add_argument("--budget-s", type=float, default=2400)
    ap.add_argument("--measured-dim", type=int, default=50, help="feature width of --features (success_pattern: 50)")
    ap.add_argument("--target-dim", type=int, default=384, help="feature width of the real grid (MiniLM: 384)")
    ap.add_argument("--out", default=None, help="also write the JSON here (updated after every step)")
    a = ap.parse_args()
    from assessors.grid.job import run_grid

    data_dir = os.environ.get("ASSESSORS_DATA_DIR", str(ROOT.parent / "shared" / "data"))
    tmp = Path(os.environ.get("GRID_BENCH_DIR", "/tmp/grid_bench"))
    base = [f"paths.data_dir={data_dir}", f"paths.outputs={tmp}/outputs", f"paths.cache_dir={tmp}/cache",
            "+experiment=paper_in_distribution", "tracking=none", f"features={a.features}"]
    t_start = time.perf_counter()
    res = {"features": a.features, "measured": [], "note": "subset timed; the rest extrapolated"}

    def dump():
        text = json.dumps(res, indent=1)
        if a.out:
            Path(a.out).write_text(text)
        return text

    def job(over):
        cfg = compose(base + over)
        t0 = time.perf_counter()
        m = run_grid(cfg)
        row = {"overrides": over, "wall_s": time.perf_counter() - t0,
               **{k: m.get(k) for k in ("time/prepare_s", "time/select_s", "time/fit_s", "val_auc_mean", "test_auc_mean")}}
        res["measured"].append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
        dump()
        return row

    # 1. fit cost per classifier and size (random selector: selection is free)
    fit = {}
    for clf in a.classifiers:
        for size in a.sizes:
            if time.perf_counter() - t_start > a.budget_s:
                break
            fit[(clf, size)] = job([f"classifier={clf}", "selector=random", f"selector.size={size}",
                                    "assessor.instance_features=embedding"])
    # 2. selection cost per selector at size 100 (one job each; fit cost measured above is subtracted)
    sel = {}
    for s in a.selectors:
        if s == "random" or time.perf_counter() - t_start > a.budget_s:
            continue
        sel[s] = job(["classifier=logreg_l2", "classifier.param_grid.C=[1.0]", f"selector={s}", "selector.size=100",
                      "assessor.instance_features=embedding"])["time/select_s"]
    res["selection_s_at_size_100"] = sel
    # 3. extrapolate
    prep = sum(r["time/prepare_s"] for r in res["measured"]) / max(1, len(res["measured"]))
    total, missing = 0.0, []
    import numpy as np

    for clf in CLASSIFIERS:
        xs = sorted(s for (c, s) in fit if c == clf)
        if not xs:
            missing.append(clf)
            continue
        ys = [fit[(clf, s)]["time/fit_s"] for s in xs]
        for size in SIZES:
            # fit time grows ~ linearly with row width (dim + size); interpolate/extrapolate in size
            est = float(np.interp(size, xs, ys)) if len(xs) == 1 or xs[0] <= size <= xs[-1] else \
                float(ys[-1] + (ys[-1] - ys[0]) / (xs[-1] - xs[0]) * (size - xs[-1])) if size > xs[-1] else float(ys[0])
            # modes: embedding (d + size), similarity (size + size), similarity_interaction (3 size)
            # measured at width measured_dim + size; rows of the real grid are wider (MiniLM)
            d = a.target_dim
            widths = [d + size, 2 * size, 3 * size]
            per_mode = [est * w / (a.measured_dim + size) for w in widths]
            total += len(SELECTORS) * (sum(per_mode) + 3 * prep)
    total += sum(sel.values()) * len(SIZES)
    res.update({"prepare_s_mean": prep, "estimated_total_s_serial": total, "n_jobs": 2,
                "estimated_total_s_joblib2_ideal": total / 2, "classifiers_not_measured": missing,
                "benchmark_wall_s": time.perf_counter() - t_start, "n_combinations": 3 * 8 * 4 * 4})
    print(dump())


if __name__ == "__main__":
    main()
