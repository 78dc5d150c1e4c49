"""The confidence profile: a dataset's sorted per-item confidences at fixed percentiles."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from assessors.errors import DataError


def confidence_profile(confidences: np.ndarray, d_conf: int = 50) -> np.ndarray:
    """Sorted confidences linearly interpolated to ``d_conf`` evenly spaced percentiles.

    Parameters
    ----------
    confidences : array of shape (n_items,)
        Per-item confidence in [0, 1] (e.g. normalised probability of the chosen label); NaN dropped.
    d_conf : int
        Profile length.

    Returns
    -------
    numpy.ndarray of shape (d_conf,)
        Values at percentiles ``0, 100/(d_conf-1), ..., 100`` (the empirical quantile function).
    """
    c = np.asarray(confidences, dtype=float).ravel()
    c = c[~np.isnan(c)]
    if c.size == 0:
        raise DataError("confidence_profile: no non-NaN confidences")
    if np.any((c < 0) | (c > 1)):
        bad = c[(c < 0) | (c > 1)][0]
        raise DataError(f"confidence_profile: confidences must lie in [0, 1], found {bad!r}")
    return np.quantile(c, np.linspace(0.0, 1.0, d_conf))


def profile_matrix(confidence_sets: Sequence[np.ndarray], d_conf: int = 50) -> np.ndarray:
    """Profiles of several datasets, shape (n_sets, d_conf)."""
    return np.stack([confidence_profile(c, d_conf) for c in confidence_sets])
