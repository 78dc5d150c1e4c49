"""XGBoost whose histogram bins are cut on a small weighted sample of the training rows.

The generic assessor's training rows repeat: the prompt part of a row is the same for every LLM that
answered the prompt, and the reference part the same for every prompt of an LLM. The per-column value
distribution of all (LLM, prompt) rows is therefore that of the unique prompts weighted by their LLMs
plus the unique LLMs weighted by their prompts, a sample ~50x smaller. Sketching the bins' cut points
on it (``QuantileDMatrix(..., ref=...)``) skips XGBoost's quantile sketch over every training row, the
larger part of building its training matrix.
"""
from __future__ import annotations

import numpy as np
import xgboost


class BinnedXGBClassifier(xgboost.XGBClassifier):
    """``xgboost.XGBClassifier`` whose ``fit`` can take the rows to cut the histogram bins on.

    Same parameters, predictions and pickling as ``XGBClassifier``; without ``bin_rows`` it is one.
    """

    def fit(self, X, y, *, bin_rows: np.ndarray | None = None, bin_weight: np.ndarray | None = None,
            **kwargs) -> "BinnedXGBClassifier":
        """``XGBClassifier.fit``, with the bins cut on ``bin_rows`` instead of ``X``.

        Parameters
        ----------
        X : array-like of shape (n, d)
        y : array-like of shape (n,)
        bin_rows : ndarray of shape (m, d), optional
            Rows whose weighted per-column value distribution is that of ``X`` (NaN cells are missing
            and do not count). The cut points are sketched on them, ``max_bin`` per column; the
            validation sets of ``eval_set`` share them, as they share ``X``'s without ``bin_rows``.
        bin_weight : ndarray of shape (m,), optional
            Weight of each of ``bin_rows`` (how many rows of ``X`` it stands for in its columns).
        **kwargs
            ``XGBClassifier.fit``'s (``sample_weight``, ``eval_set``, ``verbose``, ...).
        """
        self._cuts = None
        if bin_rows is not None and (self.tree_method or "hist") == "hist":
            self._cuts = xgboost.QuantileDMatrix(np.ascontiguousarray(bin_rows, dtype=np.float32), weight=bin_weight,
                                                 max_bin=self.max_bin, nthread=self.n_jobs, missing=self.missing)
        try:
            return super().fit(X, y, **kwargs)
        finally:
            del self._cuts  # fitted state is the booster's; the sample is not kept (nor pickled)

    def _create_dmatrix(self, ref, **kwargs):
        # the training matrix (ref=None) takes its cut points from the sample; validation sets from it
        if ref is None and getattr(self, "_cuts", None) is not None:
            return xgboost.QuantileDMatrix(**kwargs, ref=self._cuts, nthread=self.n_jobs, max_bin=self.max_bin)
        return super()._create_dmatrix(ref=ref, **kwargs)
