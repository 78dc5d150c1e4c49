"""Embedding fanned out over Dask workers, with the wrapped featurizer's own cache.

:class:`DaskFanoutFeaturizer` wraps any featurizer. For a large ``transform`` it splits the texts
into chunks and runs the wrapped featurizer's ``transform`` on each chunk as one Dask task: each
worker embeds only the texts missing from the on-disk cache and writes them as an atomic shard
(the cache's usual semantics, keyed by the featurizer identity and the text hash). The calling
process then reads every vector through the same cache. A restarted job re-embeds nothing that a
finished chunk wrote. On a cluster ``cache_dir`` must be storage every worker reads and writes.
"""
from __future__ import annotations

import logging
from typing import Sequence

import numpy as np
from sklearn.base import BaseEstimator, clone

from assessors.dask_cluster import dask_client

log = logging.getLogger(__name__)


def _embed_chunk(featurizer, texts: list[str], cached: bool):
    """Worker side: embed one chunk; with a cache the vectors stay on disk, not in the scheduler."""
    vectors = featurizer.transform(texts)
    return len(vectors) if cached else vectors


class DaskFanoutFeaturizer(BaseEstimator):
    """Run a featurizer's ``transform`` in chunks on Dask workers.

    Parameters
    ----------
    featurizer : Featurizer
        The featurizer that computes and caches the vectors (e.g. MiniLM).
    address : str, optional
        Dask scheduler address; None starts a LocalCluster on loopback for each fanned-out call.
    n_workers : int
        LocalCluster worker processes (one thread each).
    chunk_size : int
        Texts per task.
    min_texts : int
        Fewer texts than this are embedded in-process (a served model never starts a cluster).
    """

    def __init__(self, featurizer, address: str | None = None, n_workers: int = 2, chunk_size: int = 256,
                 min_texts: int = 1000):
        self.featurizer = featurizer
        self.address = address
        self.n_workers = n_workers
        self.chunk_size = chunk_size
        self.min_texts = min_texts

    @property
    def reads(self) -> str:
        """The wrapped featurizer's input (:attr:`Featurizer.reads`)."""
        return self.featurizer.reads

    @property
    def learns_from_texts(self) -> bool:
        """Whether the wrapped featurizer learns from the training prompts."""
        return self.featurizer.learns_from_texts

    def inputs(self, results, ids: Sequence[str], train_llms: Sequence[str] | None = None):
        """The wrapped featurizer's inputs for ``ids`` (:meth:`Featurizer.inputs`)."""
        return self.featurizer.inputs(results, ids, train_llms)

    def fit(self, texts: Sequence[str], y=None) -> "DaskFanoutFeaturizer":
        self.featurizer.fit(texts, y)
        return self

    def identity(self) -> str:
        return self.featurizer.identity()

    def transform(self, texts: Sequence[str]) -> np.ndarray:
        """Features of shape (n_texts, dim), float32, the wrapped featurizer's."""
        # a featurizer that reads results takes no texts: nothing to fan out
        if self.reads != "prompts" or len(texts) < self.min_texts:
            return self.featurizer.transform(texts)
        texts = list(texts)
        cached = bool(getattr(self.featurizer, "cache_dir", None))
        # a pretrained model ships as its parameters (each worker loads it once); one that learned
        # from the training texts ships fitted
        remote = self.featurizer if self.learns_from_texts else clone(self.featurizer)
        unique = list(dict.fromkeys(texts))
        chunks = [unique[i:i + self.chunk_size] for i in range(0, len(unique), self.chunk_size)]
        with dask_client(self.address, self.n_workers) as client:
            shipped = client.scatter(remote, broadcast=True)
            futures = [client.submit(_embed_chunk, shipped, chunk, cached, pure=False) for chunk in chunks]
            parts = client.gather(futures)
        log.info("embedded %d distinct texts in %d chunks on %s", len(unique), len(chunks),
                 self.address or f"a {self.n_workers}-worker LocalCluster")
        if cached:
            return self.featurizer.transform(texts)  # every vector is in the cache now
        by_text = dict(zip(unique, np.concatenate(parts)))
        return np.stack([by_text[t] for t in texts]).astype(np.float32, copy=False)
