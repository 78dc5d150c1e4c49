"""The training population's success on a prompt, from its features: the "population" fallback.

Where the target prompts are unlike the training prompts, the latent item network extrapolates and
its ranking can fall below chance, and a new LLM's answers on training prompts may not transfer
either. What often does transfer is which prompts the training LLMs found hard: the "all train
data" baseline of the paper. :class:`PopulationDifficulty` learns it as gradient-boosted trees on
each training prompt's success rate over the training LLMs (weighted by how many answered it; the
same information as a pooled classifier on (LLM, prompt) pairs without LLM features, in
``n_prompts`` rows instead of ``n_llms x n_prompts``). :class:`~assessors.trust.fallbacks.PopulationPredictor`
shifts its logits to one LLM's answered level, so the LLM's AUC is the population ranking's.
"""
from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from assessors.errors import DataError


class PopulationDifficulty(BaseEstimator):
    """Boosted trees from prompt features to the training LLMs' success rate on the prompt.

    The defaults are the paper's generic assessor's trees (``conf/classifier/xgboost.yaml``).

    Parameters
    ----------
    n_estimators, max_depth, learning_rate, subsample, colsample_bytree, max_bin : XGBoost options.
    n_jobs : int
        XGBoost threads (one: it fits in about a second, beside other work).
    seed : int
        XGBoost's random state.
    """

    def __init__(self, n_estimators: int = 150, max_depth: int = 3, learning_rate: float = 0.1,
                 subsample: float = 0.8, colsample_bytree: float = 0.8, max_bin: int = 64, n_jobs: int = 1,
                 seed: int = 0):
        self.n_estimators = n_estimators
        self.max_depth = max_depth
        self.learning_rate = learning_rate
        self.subsample = subsample
        self.colsample_bytree = colsample_bytree
        self.max_bin = max_bin
        self.n_jobs = n_jobs
        self.seed = seed

    def fit(self, X, S) -> "PopulationDifficulty":
        """Fit on prompt features ``X`` (n, d) and the training LLMs' success ``S`` (n_llms, n), 0/1 or NaN."""
        import xgboost as xgb

        X, S = np.asarray(X, dtype=np.float32), np.asarray(S, dtype=np.float64)
        if S.ndim != 2 or S.shape[1] != len(X):
            raise DataError(f"PopulationDifficulty: S must be (n_llms, {len(X)}), got {S.shape}")
        weight = np.isfinite(S).sum(0)
        keep = weight > 0
        if keep.sum() < 2:
            raise DataError(f"PopulationDifficulty: {int(keep.sum())} answered training prompt(s); need at least 2")
        rate = np.nansum(S[:, keep], 0) / weight[keep]
        params = self.get_params()  # the XGBoost options by name, but for the seed
        self.model_ = xgb.XGBRegressor(objective="binary:logistic", tree_method="hist", random_state=params.pop("seed"),
                                       **params)
        self.model_.fit(X[keep], rate, sample_weight=weight[keep])
        self.n_prompts_ = int(keep.sum())
        return self

    def logit(self, X) -> np.ndarray:
        """Logit of the population's success rate, shape (m,), for prompt features ``X`` (m, d)."""
        check_is_fitted(self, "model_")
        return np.asarray(self.model_.predict(np.asarray(X, dtype=np.float32), output_margin=True), dtype=np.float64)
