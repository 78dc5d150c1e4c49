"""Random-Sampling: the core-set mean with a Wilson score interval."""
from __future__ import annotations

import numpy as np
from scipy.stats import norm

from assessors.estimation.benchmark.base import BenchmarkEstimator, Estimate


def wilson_interval(successes: np.ndarray, n: np.ndarray, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval for binomial proportions (vectorised; arrays of equal shape)."""
    z = norm.ppf(1 - alpha / 2)
    n = np.asarray(n, dtype=np.float64)
    p = np.asarray(successes, dtype=np.float64) / n
    denom = 1 + z ** 2 / n
    centre = (p + z ** 2 / (2 * n)) / denom
    half = z * np.sqrt(p * (1 - p) / n + z ** 2 / (4 * n ** 2)) / denom
    return centre - half, centre + half


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
        lo, hi = wilson_interval(k, n, self.alpha)
        return Estimate(k / n, lo, hi)
