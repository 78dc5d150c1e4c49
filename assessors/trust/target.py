"""The prompts a posterior trust report is about: its ``target``, and how they are cut to size.

A report's expected accuracy and AUC are about target prompts: the model's reference prompts, a
candidate pool (the server's), or the prompts ``predict.py`` scores or routes. Its cost grows with
them, so a seeded random subsample of ``max_target`` of them may stand in, and the report says so.
"""
from __future__ import annotations

import numpy as np

from assessors.errors import DataError

#: The report's ``target.source`` for each kind of target prompts (see the module docstring).
REFERENCE_TARGET, POOL_TARGET, PROMPTS_TARGET = "reference", "pool", "prompts"


def subsample(n: int, max_target: int | None, seed: int = 0) -> np.ndarray | None:
    """Sorted row indices of a seeded random subsample of ``max_target`` of ``n`` target prompts; None
    when every row is kept."""
    if max_target is None or n <= int(max_target):
        return None
    return np.sort(np.random.default_rng(seed).choice(n, int(max_target), replace=False))


def target_prompts(target, d: int, source: str, max_target: int | None = None,
                   seed: int = 0, n_available: int | None = None) -> tuple[np.ndarray, dict]:
    """The report's target features (n, d), float32, and its ``target`` description.

    ``target`` (n_target, d) is checked against the model's ``d`` features; with ``max_target`` below
    ``n_target``, a random subsample of that many rows (``seed``; in their original order) is kept and
    the description says how many there were (``n_available``; or the given ``n_available`` when the
    rows were cut before featurizing).
    """
    X = np.asarray(target, dtype=np.float32)
    if X.ndim != 2 or X.shape[1] != d or not len(X):
        raise DataError(f"trust report target ({source}): expected features of shape (n_prompts > 0, {d}), "
                        f"got {X.shape}")
    info = {"source": str(source), "n_prompts": len(X)}
    keep = subsample(len(X), max_target, seed)
    if keep is not None:
        X, info = X[keep], {**info, "n_prompts": len(keep), "n_available": len(X)}
    elif n_available is not None and int(n_available) > len(X):
        info["n_available"] = int(n_available)
    return X, info
