"""``experiment=benchmark_prediction``: the benchmark-prediction harness (:mod:`assessors.estimation.harness`)
on the configured benchmarks and estimators, checkpointed per benchmark, split and trial."""
from __future__ import annotations

import hashlib
import logging
import time
from pathlib import Path
from typing import Any

import pandas as pd
from hydra.utils import instantiate
from joblib import Parallel, delayed
from omegaconf import OmegaConf

from assessors.errors import ConfigError
from assessors.estimation import harness
from assessors.estimation import harness_report as rep
from assessors.tasks.config import plain
from assessors.tasks.wrapper import task_wrapper
from assessors.threads import fit_threads

log = logging.getLogger(__name__)


def _checkpoint_path(ckpt_dir, name: str, cfg, res):
    """Per-benchmark checkpoint folder keyed by everything that changes a trial's records (None: no
    checkpoints). The trial count is not part of the key: a longer run reuses the trials a shorter
    one finished."""
    if not ckpt_dir:
        return None
    h = cfg.benchmark_prediction
    ident = OmegaConf.to_yaml(OmegaConf.create({
        "estimators": OmegaConf.to_container(cfg.estimators, resolve=True),
        "run": {k: OmegaConf.to_container(h[k], resolve=True) if OmegaConf.is_config(h[k]) else h[k]
                for k in ("splits", "sizes", "target_fraction", "trials_per_method", "trials_per_split") if k in h},
        "data": res.fingerprint()}))
    key = hashlib.sha256(ident.encode()).hexdigest()[:16]
    return Path(ckpt_dir) / f"{name}-{key}"


def load_benchmarks(bench_cfg) -> dict[str, Any]:
    """Instantiate the configured loaders: name -> Results."""
    return {name: instantiate(c) for name, c in bench_cfg.items()}


def _log_checkpoints(data: dict, paths: dict, splits: list[str], trials: int) -> None:
    """Log each benchmark's size and how many of its split-trials a restarted run reuses (here, not
    in the workers, whose log records do not reach the run's log file)."""
    for name, res in data.items():
        done = harness.finished_units(paths[name], splits, trials)
        log.info("%s: %d LLMs x %d items; %d of %d split-trials checkpointed in %s", name, *res.success.shape,
                 done, len(splits) * trials, paths[name])


def _similarities(data: dict, splits: list[str], trials: int, target_fraction: float,
                  trials_per_split: int = 1) -> pd.DataFrame:
    """Source-target similarity of every benchmark, split and trial (one row per target LLM)."""
    sims = []
    for name, res in data.items():
        for split in splits:
            for trial in range(trials if split == "interpolation" else 1):
                s = harness.source_similarity(res.success, split, trial, target_fraction, trials_per_split)
                sims.append(pd.DataFrame({"benchmark": name, "split": split, "trial": trial,
                                          "llm": [res.llms[i] for i in s.index], "similarity": s.values}))
    return pd.concat(sims, ignore_index=True)


def execute(cfg, run_) -> dict[str, float]:
    """Run the harness; ``run_`` is anything with log_metrics/log_figure/log_table/log_text."""
    h = cfg.benchmark_prediction
    estimators = {name: instantiate(c) for name, c in cfg.estimators.items()}
    if "random_sampling" not in estimators:
        raise ConfigError("benchmark_prediction needs a 'random_sampling' estimator: EGR is relative to it")
    splits, sizes, trials = list(h.splits), [int(s) for s in h.sizes], int(h.trials)
    t0 = time.perf_counter()
    data = load_benchmarks(h.benchmarks)
    # each of the n_jobs benchmark processes gets its share of the cores (null: decided here)
    blas = int(h.get("blas_threads") or fit_threads(int(h.get("n_jobs", 1)), cfg.get("threads")))
    paths = {name: _checkpoint_path(h.get("checkpoint_dir"), name, cfg, res) for name, res in data.items()}
    _log_checkpoints(data, paths, splits, trials)
    # blocks of trials of every benchmark, the largest benchmarks first: joblib runs n_jobs blocks at
    # once, each in its own process (a Ray/Dask joblib backend spreads them over a cluster), and every
    # benchmark has its first trials before any has its last; each block checkpoints its own trials
    block = max(1, int(h.get("trial_block") or trials))
    order = sorted(data, key=lambda name: -data[name].success.size)
    jobs = [(name, b0) for b0 in range(0, trials, block) for name in order]
    per_split = int(h.get("trials_per_split") or 1)
    args = dict(splits=splits, sizes=sizes, target_fraction=float(h.target_fraction), trials_per_split=per_split,
                trials_per_method=dict(h.get("trials_per_method") or {}), progress=bool(h.get("progress", True)),
                blas=blas, fit_cache_dir=h.get("fit_cache_dir"))
    done = Parallel(n_jobs=int(h.get("n_jobs", 1)))(
        delayed(harness._evaluate_and_save)(name, data[name].success, data[name].llms, estimators, paths[name],
                                            first_trial=b0, trials=min(b0 + block, trials), **args)
        for name, b0 in jobs)
    if int(h.get("n_jobs", 1)) != 1:
        release_workers()
    records = pd.concat([df for df in done if not df.empty], ignore_index=True)
    del done  # the jobs' frames: a second copy of every record while the report runs
    sim = _similarities(data, splits, trials, float(h.target_fraction), per_split)
    return rep.report(records, sim, run_, time.perf_counter() - t0, main_size=int(h.get("main_size", 50)),
                      log_records=bool(h.get("log_records", True)), paper_anchors=plain(h.get("paper_anchors")))


def release_workers() -> None:
    """Stop joblib's idle worker processes (loky keeps them for the next ``Parallel`` call).

    Each still holds the data and per-split fits of its last benchmarks, about 0.6 GB: alive beside the
    report's concatenation of every record, they took the run's summed peak RSS from 3.7 to 4.5 GB.
    """
    from joblib.externals.loky import get_reusable_executor

    get_reusable_executor().shutdown(wait=True)


run = task_wrapper("benchmark_prediction")(execute)
