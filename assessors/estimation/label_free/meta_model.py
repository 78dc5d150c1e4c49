"""The meta-model: a regressor from confidence profile to accuracy."""
from __future__ import annotations

import numpy as np
from sklearn.base import clone

from assessors.errors import DataError
from assessors.estimation.label_free.base import LabelFreeEstimator
from assessors.estimation.label_free.profile import profile_matrix


class ProfileMetaModel(LabelFreeEstimator):
    """Regress accuracy on the confidence profile.

    Parameters
    ----------
    regressor : sklearn-style regressor
        k-NN (``sklearn.neighbors.KNeighborsRegressor``), XGBoost (``xgboost.XGBRegressor``) or the
        Lightning MLP (:class:`assessors.estimation.label_free.mlp.MLPRegressor`).
    d_conf : int
        Profile length (percentiles).
    use_extra : bool
        Append the extra per-set features (e.g. the latent model's predicted accuracy) to the
        profile; a NaN there is filled with its mean over the seen sets.
    extra_weight : float or None
        Scale of the extra columns; None gives ``sqrt(d_conf)``, so that for a distance-based
        regressor (k-NN) one extra column weighs about as much as the whole profile.
    """

    def __init__(self, regressor=None, d_conf: int = 50, use_extra: bool = False, extra_weight: float | None = None):
        self.regressor = regressor
        self.d_conf = d_conf
        self.use_extra = use_extra
        self.extra_weight = extra_weight

    def _design(self, confidence_sets, extra):
        """Profiles (n_sets, d_conf), with the weighted, mean-filled extra columns when ``use_extra``."""
        X = profile_matrix(confidence_sets, self.d_conf)
        if not self.use_extra:
            return X
        if extra is None:
            raise DataError("ProfileMetaModel(use_extra=True) needs extra features: configure label_free.latent")
        w = np.sqrt(self.d_conf) if self.extra_weight is None else float(self.extra_weight)
        return np.hstack([X, w * np.where(np.isnan(extra), self.extra_mean_, extra)])

    def _fit(self, confidence_sets, accuracies, correct_sets, extra=None):
        from sklearn.neighbors import KNeighborsRegressor

        base = self.regressor if self.regressor is not None else KNeighborsRegressor(n_neighbors=5)
        k = getattr(base, "n_neighbors", None)
        self.regressor_ = clone(base)
        if k is not None and k > len(accuracies):  # k-NN cannot use more neighbours than seen sets
            self.regressor_.set_params(n_neighbors=len(accuracies))
        if self.use_extra and extra is not None:
            fin = np.isfinite(extra)
            mean = np.where(fin, extra, 0.0).sum(0) / np.maximum(fin.sum(0), 1)
            # a column unknown for every seen set is filled with the mean accuracy instead
            self.extra_mean_ = np.where(fin.any(0), mean, float(np.mean(accuracies)))
        self.regressor_.fit(self._design(confidence_sets, extra), accuracies)

    def _predict(self, confidence_sets, extra=None):
        return np.asarray(self.regressor_.predict(self._design(confidence_sets, extra)), dtype=float).ravel()
