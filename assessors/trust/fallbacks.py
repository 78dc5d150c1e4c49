"""The fallbacks a trust verdict can switch an LLM to (:data:`FALLBACKS`, :func:`fallback_predictor`).

Three fit a ranking's level to the LLM's answers and keep its AUC: :class:`ReleveledPredictor` (the model's
ranking), the recalibrated one (the same, its spread refitted too, under a slope prior chosen per
population) and :class:`PopulationPredictor` (the training LLMs', for prompts unlike the training prompts);
:class:`ReferenceOnlyPredictor` learns from the LLM's own answers only. Throughout, one LLM's answers are
``X_answered`` (n, d), the prompts' features, and ``y`` (n,), 0/1 (NaN = not answered); each predictor is fitted
on the answered ones and called on prompt features ``X`` (m, d) for P(success) (m,).
"""
from __future__ import annotations

import numpy as np

from assessors.core.evidence import Evidence
from assessors.errors import ConfigError, DataError
from assessors.irt_math import logit, map_ability, sigmoid

#: Names of the fallback predictors in reports and outputs.
RELEVEL_NAME, RECALIBRATED_NAME, FALLBACK_NAME, POPULATION_NAME = ("releveled", "recalibrated", "reference_only",
                                                                  "population")
#: Smallest slope a recalibrated ranking keeps: the model's order of the prompts is never reversed or tied.
MIN_SLOPE = 1e-3
#: Candidate slope priors (sd) of the recalibrated fallback, chosen per population on validation LLMs; the
#: first, the most cautious (predictions near the LLM's answered rate), where they cannot choose.
SLOPE_SDS = (0.1, 0.3, 1.0, 3.0)
DEFAULT_SLOPE_SD = SLOPE_SDS[0]


def answered(X_answered, y, what: str) -> tuple[np.ndarray, np.ndarray]:
    """The answered items' features (a, d) and answers (a,); :class:`DataError` naming ``what`` if none is."""
    X, y = Evidence(X_answered, y).answered()
    if not len(y):
        raise DataError(f"the {what} fallback needs at least one answered item")
    return X, y


def own_predictions(assessor, X_answered, y, X_target) -> np.ndarray:
    """The model's own P(success) (m,) on ``X_target`` (m, d) for one LLM (``assessor``: fitted, of any family):
    what it is served without a fallback."""
    state = assessor.describe_answered(Evidence(*Evidence(X_answered, y).answered()))
    return assessor.predict_state(np.asarray(X_target, dtype=np.float32), state)[0]


def fit_slope_offset(z: np.ndarray, y: np.ndarray, slope_sd: float | None = None,
                     prior_sd: float = 3.0) -> tuple[float, float]:
    """MAP ``(slope, offset)`` of ``y ~ Bernoulli(sigmoid(slope * z + offset))``, ``offset ~ N(0, prior_sd**2)``.

    Parameters
    ----------
    z : ndarray of shape (n,)
        Latent logits of the answered prompts.
    y : ndarray of shape (n,)
        0/1 answers (finite).
    slope_sd : float, optional
        Standard deviation of the slope's zero-mean normal prior (the slope floored at :data:`MIN_SLOPE`);
        None: the slope is 1 and only the offset is fitted.
    prior_sd : float
        Standard deviation of the offset's prior, in logits.

    The 2PL ability posterior (:func:`assessors.irt_math.map_ability`) with discriminations ``[z, 1]``
    (``[1]`` and difficulty ``-z`` for the offset alone); Newton steps capped at 2 logits (the first steps
    from a far level can overshoot). A zero-mean slope prior: with few answers the prediction stays near the
    LLM's answered rate, and the model's spread is kept only as far as the answers bear it out.
    """
    z, y = np.asarray(z, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if slope_sd is None:
        prec = np.eye(1) / float(prior_sd) ** 2
        offset = map_ability(np.ones((len(z), 1)), -z, y[None], np.zeros(1), prec, n_iter=50, max_step=2.0)
        return 1.0, float(offset[0, 0])
    prec = np.diag([1.0 / float(slope_sd) ** 2, 1.0 / float(prior_sd) ** 2])
    slope, offset = map_ability(np.c_[z, np.ones(len(z))], np.zeros(len(z)), y[None], np.zeros(2), prec,
                                n_iter=50, max_step=2.0)[0]
    return max(float(slope), MIN_SLOPE), float(offset)


class _Shifted:
    """A logit ranking for one LLM (``logit(X)`` (m,)); ``slope_`` and ``offset_`` fitted on its answers by
    :func:`fit_slope_offset`. A positive slope is monotone: the AUC is the ranking's."""

    def _fit(self, X, y, slope_sd: float | None = None) -> None:
        self.slope_, self.offset_ = fit_slope_offset(self.logit(X), y, slope_sd=slope_sd)

    def __call__(self, X) -> np.ndarray:
        return sigmoid(self.slope_ * self.logit(X) + self.offset_)


class ReleveledPredictor(_Shifted):
    """The model's predictions for one LLM (``assessor``: fitted, of any family), re-levelled to its answers;
    with a ``slope_sd`` (:data:`SLOPE_SDS`) their spread is refitted too: the ``recalibrated`` fallback."""

    def __init__(self, assessor, X_answered, y, slope_sd: float | None = None):
        self.name = RELEVEL_NAME if slope_sd is None else RECALIBRATED_NAME
        X, y = answered(X_answered, y, self.name)
        self.assessor = assessor
        self.state_ = assessor.describe_answered(Evidence(X, y))
        self._fit(X, y, slope_sd)

    def logit(self, X) -> np.ndarray:
        """The model's logits (m,) for this LLM on prompt features ``X`` (m, d)."""
        return logit(self.assessor.predict_state(np.asarray(X, dtype=np.float32), self.state_)[0])


class ReferenceOnlyPredictor:
    """P(success) from a logistic regression (L2, ``C=1``) on one LLM's own answers (the "reference only"
    fallback), on the fitted ``assessor``'s prompt projection (:meth:`~assessors.core.protocol.Assessor.project`),
    never its predictions. With answers of one class only, the smoothed answered rate everywhere."""

    name = FALLBACK_NAME

    def __init__(self, assessor, X_answered, y):
        from sklearn.linear_model import LogisticRegression

        X, y = answered(X_answered, y, self.name)
        self.projection = assessor.project
        self.constant_ = None
        if len(np.unique(y)) < 2:
            self.constant_ = float(np.clip((y.sum() + 0.5) / (len(y) + 1), 0.01, 0.99))
            return
        self.model_ = LogisticRegression(C=1.0, max_iter=1000).fit(self.projection(X), y)

    def __call__(self, X) -> np.ndarray:
        X = np.asarray(X, dtype=np.float32)
        if self.constant_ is not None:
            return np.full(len(X), self.constant_)
        return self.model_.predict_proba(self.projection(X))[:, 1]


class PopulationPredictor(_Shifted):
    """The population ranking (``population``: a fitted
    :class:`~assessors.trust.population.PopulationDifficulty`) shifted to one LLM's answers."""

    name = POPULATION_NAME

    def __init__(self, population, X_answered, y):
        X, y = answered(X_answered, y, self.name)
        self.logit = population.logit
        self._fit(X, y)


#: The fallbacks a trust verdict can switch an LLM to.
FALLBACKS = (RELEVEL_NAME, RECALIBRATED_NAME, FALLBACK_NAME, POPULATION_NAME)


def check_fallback(kind: str, population=True) -> None:
    """:class:`ConfigError` naming the fix when ``kind`` is no fallback of :data:`FALLBACKS`, or is ``population``
    without a fitted ``population`` model (None)."""
    if kind not in FALLBACKS:
        raise ConfigError(f"unknown trust fallback {kind!r}; choose one of {list(FALLBACKS)}")
    if kind == POPULATION_NAME and population is None:
        raise ConfigError("the population trust fallback needs a model trained with a population model "
                          "(trust.prompt_ood.population, on by default for assessor=latent); retrain, or set "
                          "trust.posterior.ood_fallback=reference_only")


def fitted_population(prompt_ood):
    """The population model a fitted prompt-side signal holds (None: no signal, or none fitted)."""
    return getattr(prompt_ood, "population_", None)


def fallback_predictor(kind: str, assessor, X_answered, y, population=None, slope_sd: float = DEFAULT_SLOPE_SD):
    """The fallback predictor ``kind`` (one of :data:`FALLBACKS`) fitted on one LLM's answers
    (``population``: the fitted :class:`~assessors.trust.population.PopulationDifficulty` it needs;
    ``slope_sd``: the recalibrated one's slope prior)."""
    check_fallback(kind, population)
    if kind == FALLBACK_NAME:
        return ReferenceOnlyPredictor(assessor, X_answered, y)
    if kind == POPULATION_NAME:
        return PopulationPredictor(population, X_answered, y)
    return ReleveledPredictor(assessor, X_answered, y, slope_sd=slope_sd if kind == RECALIBRATED_NAME else None)


def check_bands(bands, what: str = "ood_auc_bands", lowest: float = 0.0) -> dict | None:
    """``bands`` checked: ``{fallback: [low, high]}`` with fallbacks of :data:`FALLBACKS` and
    ``lowest <= low <= high <= 1`` (``lowest=-1`` for accuracy errors); None or empty: None."""
    if not bands:
        return None
    out = {}
    for k, v in dict(bands).items():
        lo, hi = (float(x) for x in v)
        if k not in FALLBACKS or not lowest <= lo <= hi <= 1.0:
            raise ConfigError(f"{what}: expected {{fallback: [low, high]}} with fallbacks from {list(FALLBACKS)} "
                              f"and {lowest:g} <= low <= high <= 1; got {k!r}: {v!r}")
        out[str(k)] = [lo, hi]
    return out
