"""Contract of label-free accuracy estimators: (confidence sets, accuracies) of seen datasets in,
predicted accuracy of unseen, unlabelled datasets out."""
from __future__ import annotations

import abc
from typing import Sequence

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from assessors.errors import DataError


class LabelFreeEstimator(BaseEstimator, abc.ABC):
    """Subclasses implement :meth:`_fit` and :meth:`_predict`.

    ``fit(confidence_sets, accuracies, correct_sets=None, extra=None)``: ``confidence_sets`` is a
    list of 1-d arrays (one per seen dataset/LLM/prompt variant), ``accuracies`` their measured
    accuracies, ``correct_sets`` the per-item 0/1 grades (used by ATC only) and ``extra`` optional
    per-set features of shape (n_sets, e), NaN where unknown (e.g. the latent model's predicted
    accuracy, :mod:`assessors.estimation.label_free.latent_feature`); ``predict`` takes the same.
    """

    def fit(self, confidence_sets: Sequence[np.ndarray], accuracies, correct_sets=None,
            extra=None) -> "LabelFreeEstimator":
        acc = np.asarray(accuracies, dtype=float)
        if len(confidence_sets) != len(acc):
            raise DataError(f"{len(confidence_sets)} confidence sets but {len(acc)} accuracies")
        if correct_sets is not None and len(correct_sets) != len(acc):
            raise DataError(f"{len(correct_sets)} grade sets but {len(acc)} accuracies")
        self._fit([np.asarray(c, dtype=float) for c in confidence_sets], acc, correct_sets,
                  _check_extra(extra, len(acc)))
        self.fitted_ = True
        return self

    def predict(self, confidence_sets: Sequence[np.ndarray], extra=None) -> np.ndarray:
        """Predicted accuracies, shape (n_sets,)."""
        check_is_fitted(self, "fitted_", msg=f"{type(self).__name__}: call fit first")
        return np.clip(self._predict([np.asarray(c, dtype=float) for c in confidence_sets],
                                     _check_extra(extra, len(confidence_sets))), 0.0, 1.0)

    @abc.abstractmethod
    def _fit(self, confidence_sets, accuracies, correct_sets, extra=None): ...

    @abc.abstractmethod
    def _predict(self, confidence_sets, extra=None) -> np.ndarray: ...


def _check_extra(extra, n_sets: int):
    """``extra`` as a float (n_sets, e) array, or None."""
    if extra is None:
        return None
    x = np.asarray(extra, dtype=float)
    x = x[:, None] if x.ndim == 1 else x
    if x.ndim != 2 or x.shape[0] != n_sets:
        raise DataError(f"extra features of shape {np.shape(extra)}; expected ({n_sets}, e), one row per set")
    return x
