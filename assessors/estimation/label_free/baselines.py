"""Label-free baselines: AVGTRAIN, AVGCONF, temperature-scaled AVGCONF, and ATC."""
from __future__ import annotations

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import logit

from assessors.errors import DataError
from assessors.irt_math import sigmoid
from assessors.estimation.label_free.base import LabelFreeEstimator


class AvgTrain(LabelFreeEstimator):
    """Predict the mean accuracy of the seen datasets, whatever the confidences."""

    def _fit(self, confidence_sets, accuracies, correct_sets, extra=None):
        self.mean_ = float(np.mean(accuracies))

    def _predict(self, confidence_sets, extra=None):
        return np.full(len(confidence_sets), self.mean_)


class AvgConf(LabelFreeEstimator):
    """Predict the mean confidence (exact when the LLM is calibrated)."""

    def _fit(self, confidence_sets, accuracies, correct_sets, extra=None):
        pass

    def _predict(self, confidence_sets, extra=None):
        return np.array([np.nanmean(c) for c in confidence_sets])


def _scaled(c, t):
    # Confidence of the chosen label only: rescale its logit (the binary view of temperature scaling).
    c = np.clip(c[~np.isnan(c)], 1e-6, 1 - 1e-6)
    return sigmoid(logit(c) / t)


class TemperatureScaling(LabelFreeEstimator):
    """AVGCONF after a temperature ``T`` fitted so seen datasets' mean scaled confidence matches accuracy.

    ``T`` minimises the squared error between AVGCONF(T) and accuracy over the seen datasets.
    """

    def __init__(self, t_bounds: tuple = (0.05, 20.0)):
        self.t_bounds = t_bounds

    def _fit(self, confidence_sets, accuracies, correct_sets, extra=None):
        def loss(log_t):
            t = np.exp(log_t)
            return float(np.mean([(np.mean(_scaled(c, t)) - a) ** 2 for c, a in zip(confidence_sets, accuracies)]))

        lo, hi = np.log(self.t_bounds[0]), np.log(self.t_bounds[1])
        self.temperature_ = float(np.exp(minimize_scalar(loss, bounds=(lo, hi), method="bounded").x))

    def _predict(self, confidence_sets, extra=None):
        return np.array([np.mean(_scaled(c, self.temperature_)) for c in confidence_sets])


class ATC(LabelFreeEstimator):
    """Average Thresholded Confidence (Garg et al., 2022): the share of items above a threshold ``t``
    chosen on the pooled seen items so that share equals their accuracy."""

    def _fit(self, confidence_sets, accuracies, correct_sets, extra=None):
        if correct_sets is None:
            raise DataError("ATC needs per-item grades of the seen datasets (correct_sets)")
        conf = np.concatenate(confidence_sets)
        corr = np.concatenate([np.asarray(c, dtype=float) for c in correct_sets])
        ok = ~np.isnan(conf) & ~np.isnan(corr)
        conf, acc = conf[ok], float(np.mean(corr[ok]))
        # P(conf > t) = acc  <=>  t is the (1 - acc) quantile of the pooled confidences
        self.threshold_ = float(np.quantile(conf, 1.0 - acc))

    def _predict(self, confidence_sets, extra=None):
        return np.array([np.mean(c[~np.isnan(c)] > self.threshold_) for c in confidence_sets])


class ExtraFeature(LabelFreeEstimator):
    """Predict one column of the extra features (e.g. the latent model's predicted accuracy), and
    the seen sets' mean accuracy where it is unknown.

    Parameters
    ----------
    column : int
        Which column of ``extra``.
    """

    def __init__(self, column: int = 0):
        self.column = column

    def _fit(self, confidence_sets, accuracies, correct_sets, extra=None):
        if extra is None:
            raise DataError("ExtraFeature predicts an extra feature: configure label_free.latent (or pass extra)")
        self.mean_ = float(np.mean(accuracies))

    def _predict(self, confidence_sets, extra=None):
        if extra is None:
            raise DataError("ExtraFeature predicts an extra feature: pass extra to predict")
        x = extra[:, int(self.column)]
        return np.where(np.isnan(x), self.mean_, x)
