"""XGBoost trained on a Dask cluster (``xgboost.dask``), predicting in-process.

:class:`DaskXGBClassifier` is an ``xgboost.XGBClassifier`` whose ``fit`` trains through
``xgboost.dask`` on the cluster at ``address`` (or on a LocalCluster it starts and stops). Given a
row source (the generic assessor's lazy (LLM, instance) pairs), the small factored parts are
scattered once and each worker builds its own row partitions, so the dense pair matrix is never
materialised in the calling process. The trained booster is brought back, so ``predict_proba``
and pickling are those of a plain ``XGBClassifier``.
"""
from __future__ import annotations

import logging
import tempfile
from pathlib import Path

import numpy as np
import xgboost

from assessors.classifiers.rows import as_row_source, iter_chunks, take
from assessors.tags import with_capabilities
from assessors.dask_cluster import dask_client

log = logging.getLogger(__name__)

#: Parameters of this class that are not XGBoost's.
_ENGINE_PARAMS = ("address", "n_workers", "threads_per_worker", "partition_rows")


def _block(rows, start: int, stop: int) -> np.ndarray:
    """Rows ``start:stop`` of a row source, built on the worker that holds it."""
    return take(rows, np.arange(start, stop, dtype=np.int64))


class DaskXGBClassifier(xgboost.XGBClassifier):
    """XGBoost classifier trained with ``xgboost.dask``.

    Parameters
    ----------
    address : str, optional
        Dask scheduler address (``tcp://host:8786``); None starts a LocalCluster on loopback for
        each ``fit``.
    n_workers, threads_per_worker : int
        LocalCluster shape (ignored with ``address``).
    partition_rows : int
        Rows per Dask partition of the training matrix.
    **kwargs
        XGBoost parameters, as for ``xgboost.XGBClassifier``.
    """

    def __sklearn_tags__(self):
        return with_capabilities(super().__sklearn_tags__(), accepts_row_source=True)

    def __init__(self, *, address: str | None = None, n_workers: int = 2, threads_per_worker: int = 1,
                 partition_rows: int = 65536, **kwargs) -> None:
        super().__init__(**kwargs)
        self.address = address
        self.n_workers = n_workers
        self.threads_per_worker = threads_per_worker
        self.partition_rows = partition_rows

    def _xgb_params(self) -> dict:
        params = xgboost.XGBClassifier.get_params(self)
        for k in _ENGINE_PARAMS:
            params.pop(k, None)
        return params

    def fit(self, X, y, sample_weight=None) -> "DaskXGBClassifier":
        """Fit on ``X`` (array or row source of shape (n, d)) and binary ``y`` of shape (n,)."""
        import dask
        import dask.array as da
        from xgboost import dask as dxgb

        X = as_row_source(X)
        y = np.asarray(y, dtype=np.float32)
        n, d = X.shape
        bounds = [(s[0], s[-1] + 1) for s in iter_chunks(np.arange(n), self.partition_rows)]
        chunks = (tuple(b - a for a, b in bounds),)
        with dask_client(self.address, self.n_workers, self.threads_per_worker) as client:
            src = client.scatter(X, broadcast=True)  # the factored parts, not the n x d rows
            parts = [da.from_delayed(dask.delayed(_block)(src, a, b), shape=(b - a, d), dtype=np.float32)
                     for a, b in bounds]
            Xd = da.concatenate(parts, axis=0)
            yd = da.from_array(y, chunks=chunks)
            wd = None if sample_weight is None else da.from_array(np.asarray(sample_weight, np.float32), chunks=chunks)
            model = dxgb.DaskXGBClassifier(**self._xgb_params())
            model.client = client
            model.fit(Xd, yd, sample_weight=wd)
            with tempfile.TemporaryDirectory() as tmp:
                # the saved model carries the scikit-learn attributes (classes_, n_classes_)
                path = Path(tmp) / "model.json"
                model.save_model(path)
                self.load_model(path)
        log.info("xgboost.dask: %d rows x %d features in %d partitions on %s", n, d, len(bounds),
                 self.address or f"a {self.n_workers}-worker LocalCluster")
        return self

    def predict_proba(self, X, **kwargs) -> np.ndarray:
        """P(class) of shape (n, 2) for ``X`` (array or row source), in-process, one block at a time."""
        X = as_row_source(X)
        if isinstance(X, np.ndarray):
            return super().predict_proba(X, **kwargs)
        out = [super(DaskXGBClassifier, self).predict_proba(take(X, idx), **kwargs)
               for idx in iter_chunks(np.arange(len(X)), self.partition_rows)]
        return np.concatenate(out) if out else np.zeros((0, 2), np.float32)
