"""Random-Sampling: the core-set mean with a Wilson score interval."""
from __future__ import annotations

import numpy as np
from statsmodels.stats.proportion import proportion_confint

from assessors.estimation.benchmark.base import BenchmarkEstimator, Estimate


class RandomSampling(BenchmarkEstimator):
    """Mean of the target's results on a uniformly random core set.

    Unbiased for the full-benchmark accuracy; the interval is the Wilson score interval on the
    observed core cells (it ignores the finite-population correction, so it is conservative when
    the core is a large share of the benchmark).
    """

    has_ci = True

    def _estimate(self, Y: np.ndarray) -> Estimate:
        obs = ~np.isnan(Y)
        k = np.nansum(Y, axis=1)
        n = obs.sum(1)
        lo, hi = proportion_confint(k, n, alpha=self.alpha, method="wilson")
        return Estimate(k / n, np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64))
