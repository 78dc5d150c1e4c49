"""Row sources: feature matrices that are indexed by batches of rows instead of materialised.

A *row source* is any object with ``len(X)``, ``X.shape == (n, d)`` and fancy indexing
``X[idx] -> float32 ndarray of shape (len(idx), d)`` for an int64 index array ``idx``.
A numpy array is one; the generic assessor's lazy (LLM, instance) pair builder is another,
which is how training rows are streamed to the MLP without a cross-product copy.
"""
from __future__ import annotations

from typing import Iterator

import numpy as np

from assessors.errors import DataError


def as_row_source(X, name: str = "X"):
    """Return ``X`` unchanged if it is a row source, else a C-contiguous float32 array.

    Parameters
    ----------
    X : array-like of shape (n, d), pandas.DataFrame, or row source
    name : str
        Used in error messages.

    Returns
    -------
    numpy.ndarray of shape (n, d), float32, or the row source itself.
    """
    if hasattr(X, "to_numpy"):  # pandas: X[idx] would select *columns*, so convert
        X = X.to_numpy(dtype=np.float32)
    if isinstance(X, (np.ndarray, list, tuple)):
        X = np.ascontiguousarray(X, dtype=np.float32)
    elif not (hasattr(X, "shape") and hasattr(X, "__getitem__") and hasattr(X, "__len__")):
        raise DataError(
            f"{name} must be an array of shape (n, d) or a row source with len(), .shape and X[idx]; "
            f"got {type(X).__name__}"
        )
    shape = tuple(X.shape)
    if len(shape) != 2:
        raise DataError(f"{name} must be 2-D (n_rows, n_features); got shape {shape}")
    if len(X) != shape[0]:
        raise DataError(f"{name}: len(X)={len(X)} disagrees with X.shape[0]={shape[0]}")
    return X


def take(X, idx: np.ndarray) -> np.ndarray:
    """Rows ``X[idx]`` as a float32 array of shape (len(idx), d), checking what a row source returns."""
    rows = np.asarray(X[idx], dtype=np.float32)
    if rows.shape != (len(idx), X.shape[1]):
        raise DataError(
            f"row source {type(X).__name__} returned shape {rows.shape} for {len(idx)} indices; "
            f"expected ({len(idx)}, {X.shape[1]})"
        )
    return rows


def iter_chunks(indices: np.ndarray, chunk_size: int) -> Iterator[np.ndarray]:
    """Consecutive slices of ``indices`` of at most ``chunk_size`` elements."""
    for start in range(0, len(indices), chunk_size):
        yield indices[start : start + chunk_size]


def column_stats(X, indices: np.ndarray, chunk_size: int = 16384) -> tuple[np.ndarray, np.ndarray]:
    """Per-column mean and standard deviation over ``X[indices]``, one streaming pass.

    Chunks are merged with Chan et al.'s parallel variance update in float64, which stays
    accurate where a naive sum of squares would cancel (large mean, small spread).

    Parameters
    ----------
    X : row source of shape (n, d)
    indices : int array of shape (m,)
        Rows to use; visited in sorted order for memory locality.

    Returns
    -------
    mean, std : numpy.ndarray of shape (d,), float32
        ``std`` is the population standard deviation; zero-variance columns get 1.

    Raises
    ------
    DataError
        If a column contains NaN or inf (the MLP cannot take missing values; XGBoost can).
    """
    d = X.shape[1]
    count, mean, m2 = 0, np.zeros(d), np.zeros(d)
    for chunk in iter_chunks(np.sort(indices), chunk_size):
        rows = take(X, chunk).astype(np.float64)
        bad = ~np.isfinite(rows)
        if bad.any():
            r, c = np.argwhere(bad)[0]
            raise DataError(
                f"X has a non-finite value ({rows[r, c]}) at row {chunk[r]}, column {c}; "
                "impute it or use a classifier that handles missing values (xgboost)"
            )
        n_b = len(rows)
        mean_b = rows.mean(axis=0)
        m2_b = ((rows - mean_b) ** 2).sum(axis=0)
        delta = mean_b - mean
        total = count + n_b
        mean = mean + delta * n_b / total
        m2 = m2 + m2_b + delta**2 * count * n_b / total
        count = total
    std = np.sqrt(m2 / max(count, 1))
    std[std < 1e-12] = 1.0  # constant columns: leave them centred, do not blow them up
    return mean.astype(np.float32), std.astype(np.float32)
