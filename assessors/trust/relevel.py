"""The "re-levelled" fallback: the latent assessor's ranking, shifted to the LLM's own answered level.

For an LLM whose trust report says the latent assessor's *level* cannot be trusted (its expected
accuracy outside the training LLMs' range, answers that misfit the item parameters), the latent
logits keep their order and get one offset ``delta`` fitted on the LLM's answers:

    P(success | prompt) = sigmoid(logit(p_latent(prompt)) + delta)

``delta`` is the MAP estimate under a ``N(0, prior_sd**2)`` prior (a shrunk offset: few answers
move it little). A constant shift of the logits is monotone, so each LLM's AUC is the latent
assessor's; only the level (accuracy, calibration) changes. Where the latent *ranking* is what failed
(prompts unlike the training prompts), the reference-only fallback is the one to use.
"""
from __future__ import annotations

import numpy as np
from scipy.special import logit

from assessors.irt_math import map_ability, sigmoid
from assessors.trust.reference_only import answered

#: Name of this fallback predictor in reports and outputs.
RELEVEL_NAME = "releveled"


def _logit(p: np.ndarray) -> np.ndarray:
    return logit(np.clip(np.asarray(p, dtype=np.float64), 1e-9, 1 - 1e-9))


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


class ReleveledPredictor:
    """The latent assessor's predictions for one LLM, re-levelled by one logit offset fitted on its answers.

    Parameters
    ----------
    assessor : LatentAssessor
        Fitted.
    X_answered : ndarray of shape (n, d)
        Features of the answered prompts.
    y : ndarray of shape (n,)
        0/1 answers, NaN = not answered.
    prior_sd : float
        Standard deviation of the offset's zero-mean normal prior, in logits.

    Attributes
    ----------
    offset_ : float
        The fitted logit offset.
    """

    name = RELEVEL_NAME

    def __init__(self, assessor, X_answered, y, prior_sd: float = 3.0):
        y, obs = answered(y, "re-levelled")
        X_answered = np.asarray(X_answered, dtype=np.float32)
        self.assessor = assessor
        self.post_ = assessor.posterior(X_answered, y[None, :])
        p_ans, _ = assessor.predict_posterior(X_answered[obs], self.post_)
        self.offset_ = fit_offset(_logit(p_ans[0]), y[obs], prior_sd=prior_sd)

    def __call__(self, X) -> np.ndarray:
        """P(success) of shape (m,) for prompt features ``X`` (m, d)."""
        p, _ = self.assessor.predict_posterior(np.asarray(X, dtype=np.float32), self.post_)
        return sigmoid(_logit(p[0]) + self.offset_)
