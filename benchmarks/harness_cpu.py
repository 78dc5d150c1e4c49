"""CPU seconds of the benchmark-prediction harness on some benchmarks, in one process; prints JSON.

Runs :func:`assessors.estimation.harness.evaluate_benchmark` (every configured method, both splits,
``trials_per_split`` 10) with one BLAS/torch thread, as a harness worker, and an empty fit cache in a
temporary folder, so no earlier fit hides a cost. torch and the optimiser machinery its first L-BFGS
imports (torch._dynamo) are loaded before the clock starts, as a worker pays them once. The records
are written to OUT (parquet): two commits' records, compared without the timing columns, show whether a
change altered any estimate.

    python benchmarks/harness_cpu.py rte,legalbench OUT.parquet [--trials 10] [--sizes 25,50,100,200]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pandas as pd
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate

from assessors.estimation import harness
from assessors.threads import thread_limits


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("benchmarks")
    ap.add_argument("out")
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--sizes", default="25,50,100,200")
    args = ap.parse_args()
    conf = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "conf")
    with initialize_config_dir(config_dir=os.path.abspath(conf), version_base=None):
        cfg = compose("train", overrides=["experiment=benchmark_prediction", "seed=0"])
    ests = {k: instantiate(v) for k, v in cfg.estimators.items()}
    data = {b: instantiate(cfg.benchmark_prediction.benchmarks[b]) for b in args.benchmarks.split(",")}
    import torch  # its start-up, paid once per worker, stays out of the clock
    # so does the first optimiser's import of torch._dynamo (about 3 CPU-s, once per process)
    torch.optim.LBFGS([torch.zeros(1, requires_grad=True)])

    sizes = [int(s) for s in args.sizes.split(",")]
    frames = []
    with tempfile.TemporaryDirectory() as fits, thread_limits(1):
        t0, w0 = time.process_time(), time.perf_counter()
        for name, res in data.items():
            frames.append(harness.evaluate_benchmark(
                name, res.success, res.llms, ests, ["interpolation", "extrapolation"], sizes, args.trials,
                trials_per_split=10, progress=False, fit_cache_dir=fits))
        cpu, wall = time.process_time() - t0, time.perf_counter() - w0
    records = pd.concat(frames, ignore_index=True)
    records.to_parquet(args.out)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    print(json.dumps({"cpu_s": round(cpu, 1), "wall_s": round(wall, 1), "rows": len(records),
                      "load": os.getloadavg()[0], "maxrss_gb": round(peak, 2)}))


if __name__ == "__main__":
    main()
