"""XGBoost whose histogram bins are cut once, on given rows, and shared between fits.

XGBoost's ``hist`` trees first sketch each feature's quantiles (the cut points) and bin the training rows;
both depend on the features alone, not on the labels. Two callers skip that work:

- the generic assessor's training rows repeat: the prompt part of a row is the same for every LLM that
  answered the prompt, the reference part the same for every prompt of an LLM. The per-column value
  distribution of all (LLM, prompt) rows is that of the unique prompts weighted by their LLMs plus the
  unique LLMs weighted by their prompts, a sample ~50x smaller: the cut points are sketched on it
  (``BinnedRows(sample, weight)``), not on every training row;
- the specific assessor fits one classifier per LLM on the same prompts: their cut points and binned
  matrix are made once (:class:`BinnedRows`) and each fit relabels the binned matrix.
"""
from __future__ import annotations

import threading

import numpy as np
import xgboost


class BinnedRows:
    """Rows whose histogram cut points are sketched once and shared by every fit that is given them.

    The reference ``xgboost.QuantileDMatrix`` (the cut points, one per ``max_bin``) is sketched on the
    rows at the first fit and shared between fits and threads. A fit on exactly these rows (and no
    sample weights) trains on them binned, relabelled with its labels: each thread keeps one binned
    matrix, so no fit bins them again. Any other training rows are binned with the shared cut points.

    Parameters
    ----------
    rows : ndarray of shape (m, d)
        Rows to sketch the cut points on (NaN cells are missing and do not count).
    weight : ndarray of shape (m,), optional
        Weight of each row in the sketch (how many training rows it stands for in its columns).
    """

    def __init__(self, rows: np.ndarray, weight: np.ndarray | None = None):
        self.rows = np.ascontiguousarray(rows, dtype=np.float32)
        self.weight = weight
        self._lock = threading.Lock()
        self._cuts: dict = {}  # max_bin -> the reference matrix whose cut points every fit uses
        self._local = threading.local()

    def covers(self, X) -> bool:
        """Whether ``X`` (n, d) holds exactly these rows, in this order (and they are unweighted)."""
        return (self.weight is None and isinstance(X, np.ndarray) and X.shape == self.rows.shape
                and (X is self.rows or np.array_equal(X, self.rows, equal_nan=True)))

    def cuts(self, est: xgboost.XGBModel) -> xgboost.QuantileDMatrix:
        """The reference matrix of ``est``'s ``max_bin`` cut points (sketched at the first call)."""
        with self._lock:
            if est.max_bin not in self._cuts:
                self._cuts[est.max_bin] = xgboost.QuantileDMatrix(
                    self.rows, weight=self.weight, max_bin=est.max_bin, nthread=est.n_jobs, missing=est.missing)
            return self._cuts[est.max_bin]

    def matrix(self, est: xgboost.XGBModel, **kwargs) -> xgboost.QuantileDMatrix:
        """``est``'s training matrix of ``kwargs`` (``XGBModel._create_dmatrix``'s: ``data``, ``label``, ...)
        binned with the shared cut points; these rows unweighted: this thread's binned matrix, relabelled."""
        plain = all(kwargs.get(k) is None for k in ("weight", "base_margin", "feature_weights"))
        if not (plain and self.covers(kwargs["data"])):
            return xgboost.QuantileDMatrix(**kwargs, ref=self.cuts(est), nthread=est.n_jobs, max_bin=est.max_bin)
        mine = self._local.__dict__.setdefault("matrices", {})
        if est.max_bin not in mine:
            with self._lock:  # the first thread's matrix is the reference: the rows are sketched and binned once
                first = self._cuts.get(est.max_bin)
                mine[est.max_bin] = xgboost.QuantileDMatrix(self.rows, ref=first, missing=est.missing,
                                                            max_bin=est.max_bin, nthread=est.n_jobs)
                self._cuts.setdefault(est.max_bin, mine[est.max_bin])
        mine[est.max_bin].set_label(kwargs["label"])
        return mine[est.max_bin]


class BinnedXGBClassifier(xgboost.XGBClassifier):
    """``xgboost.XGBClassifier`` whose ``fit`` can take the rows to cut its histogram bins on (:class:`BinnedRows`).

    Same parameters, predictions and pickling as ``XGBClassifier``; without ``bins`` it is one.
    """

    def fit(self, X, y, *, bins: BinnedRows | None = None, **kwargs) -> "BinnedXGBClassifier":
        """``XGBClassifier.fit``, with the bins cut on the rows of ``bins`` instead of ``X``.

        Parameters
        ----------
        X : array-like of shape (n, d)
        y : array-like of shape (n,)
        bins : BinnedRows, optional
            Rows whose (weighted) per-column value distribution is that of ``X``, to cut the bins on: a
            sample (the generic assessor's), or ``X``'s own rows shared with other fits, which then
            bin ``X`` once. The validation sets of ``eval_set`` share the cut points, as they share
            ``X``'s without ``bins``.
        **kwargs
            ``XGBClassifier.fit``'s (``sample_weight``, ``eval_set``, ``verbose``, ...).
        """
        # the cut points are the hist method's on the CPU (as XGBClassifier's own QuantileDMatrix)
        hist = (self.tree_method or "hist") == "hist" and (self.device or "cpu") == "cpu" and self.booster != "gblinear"
        self._bins = bins if hist else None
        try:
            return super().fit(X, y, **kwargs)
        finally:
            del self._bins  # fitted state is the booster's; the cut points are not kept (nor pickled)

    def _create_dmatrix(self, ref, **kwargs):
        # the training matrix (ref=None) takes the shared cut points; validation sets take the training matrix's
        if ref is None and getattr(self, "_bins", None) is not None:
            return self._bins.matrix(self, **kwargs)
        return super()._create_dmatrix(ref=ref, **kwargs)
