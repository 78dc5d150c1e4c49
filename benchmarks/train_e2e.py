"""End-to-end cost and quality of the default ``python train.py``; prints JSON.

Runs ``train.py`` in a subprocess per seed (first run with a cold embedding cache unless
``--warm-only``), and reports wall time, peak RSS of the child, per-method mean test AUC,
generic-vs-baseline win counts and ECE, read back from the run's MLflow store.

    python benchmarks/train_e2e.py --seeds 0 1 2 --out outputs/bench_e2e
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent


def run_once(seed: int, out: Path, cache: Path, extra: list[str]) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    cmd = [sys.executable, str(ROOT / "train.py"), f"seed={seed}", f"paths.outputs={out}", f"paths.cache_dir={cache}",
           "tracking.experiment=bench_e2e", *extra]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if proc.returncode:
        raise SystemExit(f"train.py failed (seed {seed}):\n{proc.stderr[-3000:]}")
    import mlflow

    uri = f"sqlite:///{out / 'mlflow.db'}"
    client = mlflow.tracking.MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("bench_e2e")
    run = client.search_runs([exp.experiment_id], order_by=["attributes.start_time DESC"], max_results=1)[0]
    m = run.data.metrics
    per_llm = pd.read_csv(mlflow.artifacts.download_artifacts(run_id=run.info.run_id, artifact_path="tables/per_llm_metrics.csv",
                                                              tracking_uri=uri))
    auc_cols = [c for c in per_llm.columns if c.startswith("auc/")]
    return {
        "seed": seed,
        "wall_s": round(wall, 1),
        # ru_maxrss of children is the max over all children so far (KiB on Linux)
        "peak_rss_gb_max_so_far": round(max(before, peak_kb) / 1024 ** 2, 2),
        "time": {k.split("/", 1)[1]: round(v, 1) for k, v in m.items() if k.startswith("time/")},
        "mean_auc": {k.split("/", 1)[1]: round(v, 4) for k, v in m.items() if k.startswith("auc/")},
        "ece": {k.split("/", 1)[1]: round(v, 4) for k, v in m.items() if k.startswith("ece/")},
        "headline_wins_vs": {k.split("/", 1)[1]: v for k, v in m.items() if k.startswith("headline_wins_vs/")},
        "n_test_llms": m.get("n_test_llms"),
        # by column name: method names such as "latent (raw)" are not attribute names
        "per_llm_auc": {r["llm"]: {c.split("/", 1)[1]: round(r[c], 4) for c in auc_cols} for _, r in per_llm.iterrows()},
        "run_id": run.info.run_id,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--out", type=Path, default=ROOT / "outputs" / "bench_e2e")
    ap.add_argument("--cache", type=Path, default=None, help="embedding cache (default: fresh dir = cold first run)")
    ap.add_argument("--warm-only", action="store_true", help="embed once untimed, then time warm runs")
    ap.add_argument("extra", nargs="*", help="extra Hydra overrides")
    a = ap.parse_args()
    cache = a.cache or a.out / "cache"
    if a.cache is None and cache.exists():
        shutil.rmtree(cache)  # the first run is cold by construction
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    runs = [run_once(s, a.out, cache, a.extra) for s in a.seeds]
    summary = {"runs": runs, "cold_first_run": a.cache is None and not a.warm_only}
    keys = runs[0]["mean_auc"].keys()
    summary["mean_over_seeds_auc"] = {k: round(sum(r["mean_auc"][k] for r in runs) / len(runs), 4) for k in keys}
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
