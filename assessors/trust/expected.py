"""Expected quality: how good will the generic assessor be for this LLM?

Two estimates, both computed from the new LLM's reference results alone:

* :func:`loo_reference_auc` -- the generic assessor's AUC on the reference items themselves,
  each item predicted with its own entry masked out of the reference vector (leave-one-out;
  with the entry present the input would contain the label). Needs only the fitted assessor.
* :class:`TrustModel` -- a small regression from trust signals to the realised AUC, fitted on
  validation LLMs, with a conformal band from leave-one-out residuals (jackknife+ style).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator
from sklearn.linear_model import Ridge
from sklearn.utils.validation import check_is_fitted

from assessors.errors import DataError


def loo_reference_predictions(assessor, reference_success) -> np.ndarray:
    """P(success) of shape (n_ref,) on each reference item with its own result masked.

    Parameters
    ----------
    assessor : GenericAssessor
        Fitted; its ``reference_features_`` (n_ref, d) are the reference prompts' features.
    reference_success : array-like of shape (n_ref,)
        0/1 with NaN.
    """
    r = np.asarray(reference_success, dtype=np.float32)
    X_ref = np.asarray(assessor.reference_features_, dtype=np.float32)
    if r.shape != (len(X_ref),):
        raise DataError(f"reference_success has shape {r.shape}, the assessor has {len(X_ref)} reference items")
    R = np.tile(r, (len(r), 1))
    np.fill_diagonal(R, np.nan)  # masked -> the assessor fills in the training LLMs' mean
    # (n_ref LLM-variants x n_ref prompts); only the diagonal pairs are wanted
    return np.diagonal(assessor.predict_proba(X_ref, R)).astype(np.float32).copy()


def loo_reference_auc(assessor, reference_success) -> float:
    """Generic assessor's leave-one-out AUC on the reference items (NaN if one class)."""
    from assessors.metrics import masked_auc

    r = np.asarray(reference_success, dtype=np.float32)
    keep = ~np.isnan(r)
    if len(np.unique(r[keep])) < 2:
        return float("nan")
    p = loo_reference_predictions(assessor, r)
    return masked_auc(r, p)


class TrustModel(BaseEstimator):
    """Predicts the generic assessor's AUC for an LLM from its trust signals, with a band.

    A ridge regression on standardised signals, fitted on validation LLMs (signals -> realised
    AUC). The band is ``estimate +- q`` where ``q`` is the ``ceil((n+1)(1-alpha))``-th smallest
    leave-one-out absolute residual: split-conformal coverage ``>= 1 - alpha`` for an LLM
    exchangeable with the validation LLMs. With too few validation LLMs for that rank the band
    is the whole [0, 1] (said, not hidden). Out-of-population LLMs are exactly where
    exchangeability fails, so read the band as a floor on uncertainty.

    Parameters
    ----------
    features : sequence of str
        Signal names (columns of the frame passed to ``fit``/``predict``).
    alpha : float
        Miscoverage of the band.
    ridge : float
        L2 penalty on the standardised coefficients (few validation LLMs: keep it > 0).
    """

    def __init__(self, features: Sequence[str] = ("similarity", "range_excess", "loo_auc"), alpha: float = 0.2,
                 ridge: float = 1.0):
        self.features = features
        self.alpha = alpha
        self.ridge = ridge

    def _matrix(self, signals: pd.DataFrame) -> np.ndarray:
        missing = [f for f in self.features if f not in signals.columns]
        if missing:
            raise DataError(f"TrustModel: signal columns {missing} missing (have {list(signals.columns)})")
        X = signals[list(self.features)].to_numpy(dtype=np.float64)
        # a missing signal (e.g. loo_auc of an all-0 LLM) counts as the validation mean
        return np.where(np.isnan(X), self.mean_[None, :], X)

    def fit(self, signals: pd.DataFrame, auc) -> "TrustModel":
        """Fit on validation LLMs.

        Parameters
        ----------
        signals : DataFrame of shape (k, >= len(features))
        auc : array-like of shape (k,)
            Realised generic-assessor AUC of each LLM (NaN rows are dropped).
        """
        y = np.asarray(auc, dtype=np.float64)
        keep = ~np.isnan(y)
        if keep.sum() < 1:
            raise DataError(f"TrustModel.fit: the expected-AUC band cannot be fitted: none of the {len(y)} validation "
                            "LLMs has a finite AUC (each answered its validation prompts all one way, e.g. all zero); "
                            "use validation LLMs with both outcomes, or report without an expected-AUC band")
        sig = signals.iloc[np.flatnonzero(keep)]
        raw = sig[list(self.features)].to_numpy(dtype=np.float64)
        with np.errstate(invalid="ignore"):
            mean = np.nanmean(raw, axis=0) if len(raw) else np.zeros(len(self.features))
        self.mean_ = np.nan_to_num(mean)
        X = self._matrix(sig)
        y = y[keep]
        self.scale_ = np.where(X.std(0) > 1e-9, X.std(0), 1.0)
        Z = (X - self.mean_) / self.scale_
        self.model_ = Ridge(alpha=self.ridge).fit(Z, y)
        n = len(y)
        self.n_fit_ = n
        resid = np.full(n, np.inf)
        for i in range(n if n > 1 else 0):  # leave-one-out residuals: honest even for n ~ 10
            rest = np.arange(n) != i
            resid[i] = abs(y[i] - Ridge(alpha=self.ridge).fit(Z[rest], y[rest]).predict(Z[i:i + 1])[0])
        self.residuals_ = resid
        rank = int(np.ceil((n + 1) * (1 - self.alpha)))
        self.halfwidth_ = float(np.sort(self.residuals_)[rank - 1]) if rank <= n else float("inf")
        return self

    def predict(self, signals: pd.DataFrame) -> pd.DataFrame:
        """Expected AUC and band: a frame with ``estimate, low, high`` (one row per LLM)."""
        check_is_fitted(self, "model_", msg="TrustModel is not fitted")
        Z = (self._matrix(signals) - self.mean_) / self.scale_
        est = np.clip(self.model_.predict(Z), 0.0, 1.0)
        return pd.DataFrame({"estimate": est, "low": np.clip(est - self.halfwidth_, 0, 1),
                             "high": np.clip(est + self.halfwidth_, 0, 1)}, index=signals.index)
