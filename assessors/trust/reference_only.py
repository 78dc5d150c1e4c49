"""The "reference only" fallback: a logistic regression on one LLM's own answers."""
from __future__ import annotations

import numpy as np

from assessors.errors import DataError

#: Name of the fallback predictor in reports and outputs.
FALLBACK_NAME = "reference_only"


def answered(y, what: str) -> tuple[np.ndarray, np.ndarray]:
    """``y`` (n,) as float64 and its mask of answered items; :class:`DataError` naming ``what`` if none is."""
    y = np.asarray(y, dtype=np.float64).ravel()
    obs = np.isfinite(y)
    if not obs.any():
        raise DataError(f"the {what} fallback needs at least one answered item")
    return y, obs


class ReferenceOnlyPredictor:
    """P(success) from a logistic regression on one LLM's own answers (the "reference only" fallback).

    Features are the latent assessor's whitened prompt projection (``assessor.project``). With
    answers of one class only, the smoothed answered rate everywhere.

    Parameters
    ----------
    assessor : LatentAssessor
        Fitted (its projection is used, never its item parameters).
    X_answered : ndarray of shape (n, d)
        Features of the answered prompts.
    y : ndarray of shape (n,)
        0/1 answers, NaN = not answered.
    C : float
        Inverse L2 strength of the logistic regression.
    """

    name = FALLBACK_NAME

    def __init__(self, assessor, X_answered, y, C: float = 1.0):
        from sklearn.linear_model import LogisticRegression

        y, obs = answered(y, "reference-only")
        self.projection = assessor.project
        yo = y[obs]
        self.constant_ = None
        if len(np.unique(yo)) < 2:
            self.constant_ = float(np.clip((yo.sum() + 0.5) / (len(yo) + 1), 0.01, 0.99))
            return
        Phi = self.projection(np.asarray(X_answered, dtype=np.float32)[obs])
        self.model_ = LogisticRegression(C=C, max_iter=1000).fit(Phi, yo)

    def __call__(self, X) -> np.ndarray:
        """P(success) of shape (m,) for prompt features ``X`` (m, d)."""
        X = np.asarray(X, dtype=np.float32)
        if self.constant_ is not None:
            return np.full(len(X), self.constant_)
        return self.model_.predict_proba(self.projection(X))[:, 1]
