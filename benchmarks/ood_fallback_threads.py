"""The OOD-fallback choice of ``python train.py`` (its refits on held-out subtasks) with its BLAS threads at the
run's budget and at one thread: wall and CPU seconds of each, the choice, and whether the stored records
(choice, mean AUCs, bands) are identical; prints JSON.

Runs alternate (1, budget, 1, budget threads) in one process after one data preparation, so that a change
of load hits both; on shared cores compare the ratios. Extra arguments are ``train.py`` overrides.

    python benchmarks/ood_fallback_threads.py seed=0 [split=ood_logic]
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(overrides: list[str]) -> None:
    import torch.optim  # noqa: F401 (imported by train.py before this stage: not timed here)
    from hydra import compose, initialize_config_dir
    from hydra.utils import instantiate

    from assessors.tasks.prepare import prepare
    from assessors.threads import budgeted, fit_threads, thread_limits

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("train", overrides=overrides)
    budget = fit_threads(threads=cfg.get("threads"))
    out: dict = {"overrides": overrides, "budget": budget, "load_1min_before": os.getloadavg()[0]}
    records = []
    with thread_limits(budget):
        prep = prepare(cfg)
        inst = prep.results.instances
        groups = inst.loc[prep.inst["train"], "subgroup"].fillna("<none>").astype(str).to_numpy()
        for threads in (1, None, 1, None):
            chooser = instantiate(cfg.trust.ood_fallback, threads=threads, progress=False)
            t0, c0 = time.perf_counter(), time.process_time()
            chooser.fit(lambda: instantiate(budgeted(cfg.assessor, budget)), instantiate(cfg.trust.prompt_ood).population,
                        prep.X["train"], prep.S("train", "train"), prep.S("val", "train"), groups)
            out.setdefault(f"threads_{threads or 'budget'}_wall_cpu_s", []).append(
                [round(time.perf_counter() - t0, 2), round(time.process_time() - c0, 2)])
            records.append(chooser.record())
    out["choice"] = records[0]["choice"]
    out["mean_auc"] = records[0]["mean_auc"]
    out["records_identical"] = all(r == records[0] for r in records)
    out["load_1min_after"] = os.getloadavg()[0]
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1:])
