"""Random-Sampling-Learn: ridge regression from core results to full accuracy, fitted on sources."""
from __future__ import annotations

import numpy as np
from sklearn.linear_model import RidgeCV

from assessors.estimation.benchmark.base import BenchmarkEstimator, Estimate, impute_rows


class RandomSamplingLearn(BenchmarkEstimator):
    """Ridge (alpha by leave-one-out CV) from a random core set's results to full-benchmark accuracy.

    Fitted on the source LLMs (features: their core results; label: their full accuracy), as in
    Zhang et al. (2025). No confidence interval.

    Parameters
    ----------
    alphas : sequence of float
        Ridge penalties searched by RidgeCV.
    """

    def __init__(self, core_size: int = 50, seed: int = 0, alpha: float = 0.05,
                 alphas: tuple = (0.1, 1.0, 10.0)):
        super().__init__(core_size, seed, alpha)
        self.alphas = alphas

    def _fit(self, S, filled, features, rng):
        acc = np.nanmean(S, axis=1)
        self.model_ = RidgeCV(alphas=self.alphas).fit(filled[:, self.core_index_], acc)

    def _estimate(self, Y: np.ndarray) -> Estimate:
        return Estimate(self.model_.predict(impute_rows(Y)))
