"""Small array helpers shared by every layer."""
from __future__ import annotations

import numpy as np


def unit_rows(X: np.ndarray) -> np.ndarray:
    """Rows of ``X`` (n, d) scaled to unit Euclidean norm, float32 (n, d): dot products are cosines.

    An all-zero row stays zero (its norm is floored at 1e-12).
    """
    X = np.asarray(X, dtype=np.float32)
    return X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12)
