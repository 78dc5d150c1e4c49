"""Benchmark-prediction harness (Zhang et al. 2025): EG / EGR, CI coverage, similarity vs gap.

``python train.py experiment=benchmark_prediction`` runs it (:mod:`assessors.tasks.benchmark_prediction`). For every benchmark, model
split (interpolation: random 25% of LLMs are targets; extrapolation: the lowest 50% by accuracy
are sources and the top 30% targets), core-set size and trial, every configured estimator is
fitted on the source LLMs and estimates each target's full-benchmark accuracy from the target's
core results. Random-core estimators share the trial's core set (a paired comparison).

Each trial draws its own core sets; ``trials_per_split`` consecutive interpolation trials share one
random model split, so the work that depends on the source LLMs alone (IRT and latent item fits,
lasso paths, item correlations, the split-level assessor proxy's classifier, and the IRT anchors and
anchor-point medoids of a fixed ``core_seed``, cached in :mod:`assessors.estimation.benchmark.base`)
is done once per split instead of once per trial. The targets stay out of every fit: they are the same LLMs in
all trials of a split. With ``fit_cache_dir`` those fits are also kept on disk
(:mod:`assessors.estimation.benchmark.fit_cache`), so the harness jobs that share a split (extrapolation
has one per benchmark, split over every block of trials) fit it once between them.
"""
from __future__ import annotations

import copy
import logging
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from assessors.errors import ConfigError
from assessors.estimation.benchmark.fit_cache import disk_cache
from assessors.io import atomic_write

log = logging.getLogger(__name__)


def model_split(acc: np.ndarray, kind: str, trial: int, target_fraction: float = 0.25,
                trials_per_split: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """(source, target) LLM positions for one trial.

    ``interpolation``: a random ``target_fraction`` of the LLMs are targets, seeded by
    ``trial // trials_per_split`` (so trials ``0 .. trials_per_split - 1`` share split 0, and so on).
    ``extrapolation``: sources are the lowest 50% by accuracy and targets the top 30% (fixed).
    """
    n = acc.size
    if int(trials_per_split) < 1:
        raise ConfigError(f"trials_per_split={trials_per_split}: use 1 (a new split every trial) or more")
    if kind == "interpolation":
        perm = np.random.default_rng(int(trial) // int(trials_per_split)).permutation(n)
        k = max(1, int(target_fraction * n))
        return np.sort(perm[k:]), np.sort(perm[:k])
    if kind == "extrapolation":
        order = np.argsort(acc, kind="stable")
        return np.sort(order[: int(0.5 * n)]), np.sort(order[-int(0.3 * n):])
    raise ConfigError(f"unknown model split {kind!r}: use 'interpolation' or 'extrapolation'")


COLUMNS = ["benchmark", "split", "size", "trial", "method", "llm", "true", "point", "ci_low", "ci_high", "core_n",
           "fit_s", "estimate_s", "evidence"]


def evaluate_benchmark(name: str, S: np.ndarray, llms: list[str], estimators: dict[str, Any], splits, sizes,
                       trials: int, target_fraction: float = 0.25, trials_per_method: dict | None = None,
                       features: np.ndarray | None = None, progress: bool = True,
                       checkpoint: str | Path | None = None, first_trial: int = 0,
                       trials_per_split: int = 1, fit_cache_dir: str | Path | None = None) -> pd.DataFrame:
    """One row per (split, size, trial, method, target LLM) with truth, estimate, CI and timings.

    Parameters
    ----------
    S : ndarray of shape (n_llms, n_items), NaN allowed
    estimators : dict name -> unfitted BenchmarkEstimator (cloned with core_size/seed per trial)
    trials_per_method : dict name -> int, optional
        Fewer trials for expensive methods (e.g. the IRT ones).
    checkpoint : path of a folder, optional
        Each finished (split, trial), all sizes and methods, is written there atomically as
        ``<split>-<trial>.parquet``; a restarted call loads those and computes only the others. A
        trial's records do not depend on how many trials the run has, so raising ``trials`` reuses them.
    first_trial : int
        Run trials ``first_trial .. trials - 1`` only (a block of trials, as the task schedules them).
    trials_per_split : int
        Consecutive interpolation trials that share one model split (see :func:`model_split`); each
        trial keeps its own core sets. A block of trials aligned to it fits each split once.
    fit_cache_dir : path of a folder, optional
        Where the fits that depend on the source LLMs alone are kept on disk
        (:mod:`~assessors.estimation.benchmark.fit_cache`), so another call on the same split (a later
        block of trials, a restarted run) loads them instead of fitting again. None: in memory only.
    """
    from tqdm.auto import tqdm

    S = np.asarray(S, dtype=np.float64)
    acc = np.nanmean(S, axis=1)
    n_items = S.shape[1]
    skipped = sorted({sz for sz in sizes if sz >= n_items})
    if skipped:
        log.warning("%s: core sizes %s skipped (benchmark has %d items)", name, skipped, n_items)
    sizes = [sz for sz in sizes if sz < n_items]
    folder = Path(checkpoint) if checkpoint is not None else None
    # the sizes of one (split, trial) share its source split (fits cached per split are reused) and
    # are the unit a checkpoint keeps; trial-major, so a stopped run has both splits of its first trials
    units = [(sp, t) for t in range(int(first_trial), trials) for sp in splits]
    frames = _read_parts(folder, units)
    bar = tqdm(total=len(units), initial=len(frames), desc=name, disable=not progress, mininterval=5)
    with disk_cache(fit_cache_dir):
        for split, trial in units:
            if (split, trial) in frames:
                continue
            frames[(split, trial)] = df = _one_unit(name, S, acc, llms, estimators, split, trial, sizes, trials,
                                                    target_fraction, trials_per_method, features, trials_per_split)
            if folder is not None:
                atomic_write(_part(folder, split, trial), lambda tmp: df.to_parquet(tmp, index=False))
            bar.update()
    bar.close()
    parts = [frames[u] for u in units if not frames[u].empty]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=COLUMNS)


def _one_unit(name, S, acc, llms, estimators, split, trial, sizes, trials, target_fraction, trials_per_method,
              features, trials_per_split=1) -> pd.DataFrame:
    """The records of one (split, trial): every size and method (see :func:`evaluate_benchmark`)."""
    src, tgt = model_split(acc, split, trial, target_fraction, trials_per_split)
    unit = split_rows(S, llms, src, tgt)
    n_items = S.shape[1]
    rows = []
    estimators = _templates(estimators)
    for size in sizes:
        core = np.sort(np.random.default_rng(10_000 + trial).choice(n_items, size=size, replace=False))
        for mname, proto in estimators.items():
            if trials_per_method and trial >= int(trials_per_method.get(mname, trials)):
                continue
            est, out, fit_s, estimate_s = _fit_and_estimate(proto, unit, core, size, trial, features)
            lo = out.ci_low if out.ci_low is not None else np.full(tgt.size, np.nan)
            hi = out.ci_high if out.ci_high is not None else np.full(tgt.size, np.nan)
            rows += [(name, split, size, trial, mname, llms[ti], acc[ti], out.point[j], lo[j], hi[j],
                      est.core_index_.size, fit_s, estimate_s, out.evidence[j]) for j, ti in enumerate(tgt)]
    return pd.DataFrame(rows, columns=COLUMNS)


def _templates(estimators: dict) -> dict:
    """Unfitted clones of ``estimators`` (name -> estimator), which each fit copies with its core size
    and seed set (:func:`_fit_and_estimate`)."""
    from sklearn.base import clone

    return {name: clone(proto) for name, proto in estimators.items()}


def split_rows(S: np.ndarray, llms: list[str], src: np.ndarray, tgt: np.ndarray) -> dict:
    """The source and target rows and names of one model split, taken once for all its fits.

    The source matrix is read-only, so the per-split cache hashes it once for every method and size
    (:func:`~assessors.estimation.benchmark.base.cached`) instead of once per fit.
    """
    source = S[src]
    source.flags.writeable = False
    return {"source": source, "target": S[tgt], "source_llms": [llms[i] for i in src],
            "target_llms": [llms[i] for i in tgt]}


def _part(folder: Path, split: str, trial: int) -> Path:
    """The checkpoint file of one (split, trial)."""
    return folder / f"{split}-{trial:04d}.parquet"


def _read_parts(folder: Path | None, units) -> dict:
    """The checkpointed records of those (split, trial) ``units`` that have a file in ``folder``."""
    if folder is None:
        return {}
    return {u: pd.read_parquet(_part(folder, *u)) for u in units if _part(folder, *u).exists()}


def finished_units(folder: str | Path | None, splits, trials: int) -> int:
    """How many of the (split, trial) units of a run are already checkpointed in ``folder``."""
    if folder is None:
        return 0
    return sum(_part(Path(folder), sp, t).exists() for sp in splits for t in range(trials))


def _fit_and_estimate(proto, unit: dict, core: np.ndarray, size: int, trial: int, features):
    """Fit a copy of the unfitted ``proto`` (core size ``size``, seed ``trial``) on the source rows of ``unit``
    (:func:`split_rows`) and estimate the targets from their core items. Returns the fitted
    estimator, its Estimate, the fit seconds and the estimate seconds per target."""
    est = copy.deepcopy(proto)  # an unfitted template (see _templates): clone's parameter checks cost more
    est.core_size, est.seed = size, trial
    t0 = time.perf_counter()
    est.fit(unit["source"], features, core_index=None if est.selects_core else core, source_llms=unit["source_llms"])
    t1 = time.perf_counter()
    out = est.estimate(unit["target"][:, est.core_index_], target_llms=unit["target_llms"])
    t2 = time.perf_counter()
    return est, out, t1 - t0, (t2 - t1) / len(unit["target_llms"])


def source_similarity(S: np.ndarray, split: str, trial: int, target_fraction: float = 0.25,
                      trials_per_split: int = 1) -> pd.Series:
    """Similarity of each target to the sources: max Pearson correlation of full score vectors."""
    from assessors.estimation.benchmark.base import impute_columns

    F = impute_columns(S)
    src, tgt = model_split(np.nanmean(S, axis=1), split, trial, target_fraction, trials_per_split)
    with np.errstate(invalid="ignore", divide="ignore"):
        C = np.corrcoef(F[tgt], F[src])[: tgt.size, tgt.size:]
    return pd.Series(np.nan_to_num(C, nan=0.0).max(1), index=tgt)


def _evaluate_and_save(name, S, llms, estimators, path, *, blas: int, **kw) -> pd.DataFrame:
    """One benchmark's records, checkpointed per (split, trial) in the folder ``path`` (if any)."""
    from assessors.threads import thread_limits

    with thread_limits(blas):
        return evaluate_benchmark(name, S, llms, estimators, checkpoint=path, **kw)
