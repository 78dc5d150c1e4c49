"""The meta-model: a regressor from confidence profile to accuracy."""
from __future__ import annotations

import numpy as np
from sklearn.base import clone

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
    """

    def __init__(self, regressor=None, d_conf: int = 50):
        self.regressor = regressor
        self.d_conf = d_conf

    def _fit(self, confidence_sets, accuracies, correct_sets):
        from sklearn.neighbors import KNeighborsRegressor

        base = self.regressor if self.regressor is not None else KNeighborsRegressor(n_neighbors=5)
        k = getattr(base, "n_neighbors", None)
        self.regressor_ = clone(base)
        if k is not None and k > len(accuracies):  # k-NN cannot use more neighbours than seen sets
            self.regressor_.set_params(n_neighbors=len(accuracies))
        self.regressor_.fit(profile_matrix(confidence_sets, self.d_conf), accuracies)

    def _predict(self, confidence_sets):
        return np.asarray(self.regressor_.predict(profile_matrix(confidence_sets, self.d_conf)), dtype=float).ravel()
