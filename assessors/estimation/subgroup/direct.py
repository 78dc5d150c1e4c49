"""DT: the direct estimator, the subgroup mean with a Wilson score interval."""
from __future__ import annotations

import numpy as np
from statsmodels.stats.proportion import proportion_confint

from assessors.estimation.subgroup.base import SubgroupEstimator


class DirectEstimator(SubgroupEstimator):
    """Subgroup mean ``k / n`` with a Wilson interval (statsmodels' ``proportion_confint``).

    Parameters
    ----------
    alpha : float
        Non-coverage level of the interval (0.05 gives 95% intervals).
    """

    def __init__(self, alpha: float = 0.05):
        self.alpha = alpha

    def _fit(self, successes, trials, group_features, assessor_mean, answers=None):
        lo, hi = proportion_confint(successes, trials, alpha=self.alpha, method="wilson")
        est = successes / trials
        # statsmodels' Wilson bound at k = n can round to 1 - 1e-16, just below the estimate
        return est, np.minimum(np.asarray(lo, dtype=float), est), np.maximum(np.asarray(hi, dtype=float), est)
