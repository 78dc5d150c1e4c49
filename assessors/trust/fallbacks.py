"""The fallbacks a trust verdict can switch an LLM to, and the bands of what it is served.

* ``releveled`` (:class:`ReleveledPredictor`): the model's own ranking with one logit offset fitted on
  the LLM's answers (for a model whose *level* cannot be trusted; the AUC is the model's);
* ``recalibrated`` (:class:`RecalibratedPredictor`): the model's ranking with a slope and an offset fitted on
  the LLM's answers, the slope shrunk towards zero (for an LLM outside the population, whose level and spread
  the model cannot be trusted with; the AUC is still the model's);
* ``reference_only`` (:class:`ReferenceOnlyPredictor`): a logistic regression on the LLM's own answers;
* ``population`` (:class:`PopulationPredictor`): which prompts the training LLMs found hard, learned from
  prompt features (:class:`~assessors.trust.population.PopulationDifficulty`), shifted to the LLM's level
  (for prompts unlike the training prompts, where the model's ranking is suspect).

A report's ``auc_band`` and ``accuracy_band`` are about the model; :func:`served_auc_band` and
:func:`served_accuracy_band` give those of what the LLM is served: the model's, or a fallback's (from
held-out subtasks of the training prompts, measured by ``train.py``, or from the LLM's answered level).
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from assessors.core.evidence import Evidence
from assessors.errors import ConfigError, DataError
from assessors.irt_math import logit, map_ability, sigmoid

#: Names of the fallback predictors in reports and outputs.
RELEVEL_NAME, FALLBACK_NAME, POPULATION_NAME = "releveled", "reference_only", "population"
RECALIBRATED_NAME = "recalibrated"
#: Smallest slope a recalibrated ranking keeps: the model's order of the prompts is never reversed or tied.
MIN_SLOPE = 1e-3


def answered(y, what: str) -> tuple[np.ndarray, np.ndarray]:
    """``y`` (n,) as float64 and its mask of answered items; :class:`DataError` naming ``what`` if none is."""
    y = np.asarray(y, dtype=np.float64).ravel()
    obs = np.isfinite(y)
    if not obs.any():
        raise DataError(f"the {what} fallback needs at least one answered item")
    return y, obs


def fit_offset(z: np.ndarray, y: np.ndarray, prior_sd: float = 3.0, n_iter: int = 50) -> float:
    """MAP logit offset ``delta`` of ``y ~ Bernoulli(sigmoid(z + delta))``, ``delta ~ N(0, prior_sd**2)``.

    Parameters
    ----------
    z : ndarray of shape (n,)
        Latent logits of the answered prompts.
    y : ndarray of shape (n,)
        0/1 answers (finite).

    The one-dimensional case of the 2PL ability posterior (:func:`assessors.irt_math.map_ability`):
    discrimination 1, difficulty ``-z``; Newton steps capped at 2 logits (the first steps from a far
    level can overshoot).
    """
    z, y = np.asarray(z, dtype=np.float64), np.asarray(y, dtype=np.float64)
    prec = np.eye(1) / float(prior_sd) ** 2
    return float(map_ability(np.ones((len(z), 1)), -z, y[None], np.zeros(1), prec, n_iter=n_iter, max_step=2.0)[0, 0])


class _Shifted:
    """A logit ranking for one LLM, shifted by one offset fitted on its answers (``_logit(X)`` (m,) the ranking).

    Parameters of the subclasses: ``X_answered`` (n, d) the answered prompts' features, ``y`` (n,) the 0/1
    answers (NaN = not answered), ``prior_sd`` the standard deviation of the offset's zero-mean normal
    prior, in logits. ``offset_``: the fitted offset. A constant shift is monotone: the AUC is the ranking's.
    """

    def _fit(self, X_answered, y, obs, prior_sd: float) -> None:
        self.offset_ = fit_offset(self._logit(np.asarray(X_answered, dtype=np.float32)[obs]), y[obs], prior_sd=prior_sd)

    def __call__(self, X) -> np.ndarray:
        """P(success) of shape (m,) for prompt features ``X`` (m, d)."""
        return sigmoid(self._logit(X) + self.offset_)


class ReleveledPredictor(_Shifted):
    """The model's predictions for one LLM (``assessor``: a fitted assessor of any family), re-levelled to
    its answers."""

    name = RELEVEL_NAME

    def __init__(self, assessor, X_answered, y, prior_sd: float = 3.0):
        y, obs = answered(y, "re-levelled")
        X_answered = np.asarray(X_answered, dtype=np.float32)
        self.assessor = assessor
        self.state_ = assessor.describe_answered(Evidence(X_answered[obs], y[obs]))
        self._fit(X_answered, y, obs, prior_sd)

    def _logit(self, X) -> np.ndarray:
        return logit(self.assessor.predict_state(np.asarray(X, dtype=np.float32), self.state_)[0])


def fit_slope_offset(z: np.ndarray, y: np.ndarray, slope_sd: float = 0.1, prior_sd: float = 3.0,
                     n_iter: int = 50) -> tuple[float, float]:
    """MAP ``(slope, offset)`` of ``y ~ Bernoulli(sigmoid(slope * z + offset))`` under independent zero-mean
    normal priors of standard deviations ``slope_sd`` and ``prior_sd``; the slope floored at :data:`MIN_SLOPE`.
    ``z`` (n,) and ``y`` (n,) as in :func:`fit_offset`.

    The two-dimensional case of :func:`assessors.irt_math.map_ability` (discriminations ``[z, 1]``, difficulty
    0). A zero-mean slope prior: with few answers the prediction stays near the LLM's answered rate, and the
    model's spread is kept only as far as the answers bear it out.
    """
    z, y = np.asarray(z, dtype=np.float64), np.asarray(y, dtype=np.float64)
    prec = np.diag([1.0 / float(slope_sd) ** 2, 1.0 / float(prior_sd) ** 2])
    slope, offset = map_ability(np.c_[z, np.ones(len(z))], np.zeros(len(z)), y[None], np.zeros(2), prec,
                                n_iter=n_iter, max_step=2.0)[0]
    return max(float(slope), MIN_SLOPE), float(offset)


class RecalibratedPredictor(ReleveledPredictor):
    """The model's predictions for one LLM with their slope and level refitted on its answers
    (:func:`fit_slope_offset`; ``slope_sd`` the slope prior's standard deviation, in logits per logit: 0.1
    had the lowest Brier score of 0.1, 0.3, 1 and 3 on the validation LLMs of the KindsOfReasoning split)."""

    name = RECALIBRATED_NAME

    def __init__(self, assessor, X_answered, y, slope_sd: float = 0.1, prior_sd: float = 3.0):
        self.slope_sd = slope_sd
        super().__init__(assessor, X_answered, y, prior_sd=prior_sd)

    def _fit(self, X_answered, y, obs, prior_sd: float) -> None:
        z = self._logit(np.asarray(X_answered, dtype=np.float32)[obs])
        self.slope_, self.offset_ = fit_slope_offset(z, y[obs], slope_sd=self.slope_sd, prior_sd=prior_sd)

    def __call__(self, X) -> np.ndarray:
        """P(success) of shape (m,) for prompt features ``X`` (m, d)."""
        return sigmoid(self.slope_ * self._logit(X) + self.offset_)


class ReferenceOnlyPredictor:
    """P(success) from a logistic regression on one LLM's own answers (the "reference only" fallback).

    Features are the family's prompt projection (:meth:`~assessors.core.protocol.Assessor.project`: the
    latent assessor's whitened one, the prompt features themselves for the others). With answers of one class only, the
    smoothed answered rate everywhere.

    Parameters
    ----------
    assessor : Assessor
        Fitted; its projection is used, never its predictions.
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


class PopulationPredictor(_Shifted):
    """The population ranking (``population``: a fitted
    :class:`~assessors.trust.population.PopulationDifficulty`) shifted to one LLM's answers."""

    name = POPULATION_NAME

    def __init__(self, population, X_answered, y, prior_sd: float = 3.0):
        y, obs = answered(y, "population")
        self.population = population
        self._fit(X_answered, y, obs, prior_sd)

    def _logit(self, X) -> np.ndarray:
        return self.population.logit(X)


def served_auc_band(auc_band, flags, predictor: str, ood_fallback: str, ood_auc_bands: Mapping | None,
                    chance_low: float | None = None):
    """``(band, source)``: the AUC band of the predictions an LLM is served, and where it comes from.

    The model and the re-levelled and recalibrated fallbacks (the same ranking): the report's band (``posterior``), unless
    the prompts are out of distribution and the applied fallback has a band from held-out subtasks
    (``ood_auc_bands``), its low end lowered to ``chance_low`` as for any ``out of population`` verdict.
    Any other fallback: ``(None, None)``.
    """
    ood = "prompts_out_of_distribution" in flags
    if ood and predictor == ood_fallback and predictor in (ood_auc_bands or {}):
        lo, hi = ood_auc_bands[predictor]
        if chance_low is not None and np.isfinite(chance_low):
            lo = min(lo, float(chance_low))
        return [lo, hi], "held-out subtasks"
    if predictor in ("latent", RELEVEL_NAME, RECALIBRATED_NAME):
        return list(auc_band), "posterior"
    return None, None


def served_accuracy_band(expected, band, flags, predictor: str, ood_fallback: str,
                         ood_accuracy_bands: Mapping | None, mean_prediction: float, answered=None,
                         level: float = 0.9):
    """``(expected accuracy, band, source)`` of the predictions an LLM is served.

    - Prompts out of distribution, served by a fallback with an accuracy-error band from held-out subtasks
      (``ood_accuracy_bands``): its ``mean_prediction`` plus that band, widened to hold the report's
      ``band`` too (nothing tells whether the fallback's level or the model's transfers to such prompts).
    - Any other fallback, given ``answered = (successes, n, mean prediction on the answered prompts)``:
      the Wilson ``level`` interval of ``successes / n``, spanning it both where it is and moved by how
      much easier the fallback finds the target prompts than the answered ones (``answered level``).
    - The model itself: the report's ``expected`` and ``band`` (``posterior``).

    Bands are clipped to [0, 1]; a fallback without either gets its mean prediction and no band.
    """
    m = float(mean_prediction)
    if "prompts_out_of_distribution" in flags and predictor == ood_fallback and predictor in (ood_accuracy_bands or {}):
        lo, hi = ood_accuracy_bands[predictor]
        return m, _clipped(min(m + lo, band[0]), max(m + hi, band[1])), "held-out subtasks"
    if predictor == "latent":
        return expected, list(band), "posterior"
    if answered is not None and int(answered[1]) > 0:
        from statsmodels.stats.proportion import proportion_confint

        k, n, m_answered = answered
        lo, hi = proportion_confint(int(k), int(n), alpha=1.0 - float(level), method="wilson")
        shift = m - float(m_answered)
        return m, _clipped(lo + min(shift, 0.0), hi + max(shift, 0.0)), "answered level"
    return m, None, None


def _clipped(lo: float, hi: float) -> list[float]:
    return [float(np.clip(lo, 0.0, 1.0)), float(np.clip(hi, 0.0, 1.0))]


def check_bands(bands, names, what: str = "ood_auc_bands", lowest: float = 0.0) -> dict | None:
    """``bands`` checked: ``{fallback: [low, high]}`` with fallbacks from ``names`` and
    ``lowest <= low <= high <= 1`` (``lowest=-1`` for accuracy errors); None or empty: None."""
    if not bands:
        return None
    out = {}
    for k, v in dict(bands).items():
        lo, hi = (float(x) for x in v)
        if k not in names or not lowest <= lo <= hi <= 1.0:
            raise ConfigError(f"{what}: expected {{fallback: [low, high]}} with fallbacks from {list(names)} "
                              f"and {lowest:g} <= low <= high <= 1; got {k!r}: {v!r}")
        out[str(k)] = [lo, hi]
    return out
