"""Where the time of a warm default ``python train.py`` goes, per stage; prints JSON.

Runs ``train.py`` in a subprocess per seed on the warm embedding cache (``paths.cache_dir``'s default
unless ``--cache``), with :func:`train_e2e.run_once` (wall time, peak RSS, the run's ``time/*`` metrics
and mean test AUCs), and adds the child's CPU time (user + system: less sensitive than wall time to
other processes on the cores), the load average before and after, and the stages' share of the total.
On shared cores compare stages within one run (their ratios), not wall times across runs.

    python benchmarks/train_time.py --seeds 0
    python benchmarks/train_time.py --seeds 0 -- compare.paper_generic=false
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from train_e2e import run_once  # noqa: E402


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(seed: int, out: Path, cache: Path, extra: list[str]) -> dict:
    """One warm run of ``train.py``: :func:`run_once` plus CPU time, load and each stage's share."""
    load_before = os.getloadavg()[0]
    cpu0 = _cpu_s()
    run = run_once(seed, out, cache, extra)
    stages = dict(run["time"])
    total = stages.get("total_s") or run["wall_s"]
    return {
        "seed": seed,
        "wall_s": run["wall_s"],
        "cpu_s": round(_cpu_s() - cpu0, 1),
        "load_1min": {"before": round(load_before, 2), "after": round(os.getloadavg()[0], 2)},
        "peak_rss_gb_max_so_far": run["peak_rss_gb_max_so_far"],
        "stages_s": stages,
        # the task's own clock (total_s) runs from loading the data to the served table; the rest is
        # start-up (imports, config), the model's MLflow logging and the printed report
        "outside_task_s": round(run["wall_s"] - total, 1),
        "share_of_task": {k: round(v / total, 3) for k, v in stages.items() if k != "total_s" and total},
        "mean_auc": run["mean_auc"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--out", type=Path, default=None, help="run folder (default: a fresh temporary one)")
    ap.add_argument("--cache", type=Path, default=None, help="embedding cache (default: paths.cache_dir's, warm)")
    ap.add_argument("extra", nargs="*", help="extra Hydra overrides")
    a = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    cache = a.cache or Path(os.environ.get("ASSESSORS_CACHE_DIR", Path.home() / ".cache" / "assessors"))
    with tempfile.TemporaryDirectory(prefix="train_time_") as tmp:
        out = a.out or Path(tmp)
        runs = [timed(s, out, cache, a.extra) for s in a.seeds]
    print(json.dumps({"overrides": a.extra, "cores": len(os.sched_getaffinity(0)), "runs": runs}, indent=2))


if __name__ == "__main__":
    main()
