"""The featurizer contract: texts in, float32 matrix out, cached on disk."""
from __future__ import annotations

import abc
from typing import Sequence

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from assessors.linalg import unit_rows  # noqa: F401  (re-exported: the featurizers' row scaling)


class Featurizer(BaseEstimator, abc.ABC):
    """Turns instances into a float32 feature matrix.

    Subclasses implement :meth:`_transform` (and :meth:`_fit` when they learn from the
    training prompts, e.g. Word2Vec or unigram frequencies, setting :attr:`learns_from_texts`).
    ``transform`` consults the on-disk cache (``cache_dir``) keyed by :meth:`identity` and the
    text hash, so a second run re-embeds nothing.

    What ``fit`` and ``transform`` take is the featurizer's to say: :attr:`reads` names it and
    :meth:`inputs` builds it from the results, so callers featurize any featurizer the same way
    (``featurizer.transform(featurizer.inputs(results, ids, train_llms))``).

    Parameters
    ----------
    cache_dir : str or None
        Directory of the embedding cache; None disables caching.
    """

    #: Parameters that change how features are computed but not their values; left out
    #: of :meth:`identity` so that, e.g., a different batch size still hits the cache.
    runtime_params: tuple[str, ...] = ("cache_dir", "api_key", "batch_size", "show_progress")
    #: Private attributes rebuilt on first use (a loaded model, a client holding a key and a
    #: connection pool, one-time warnings): kept out of pickles.
    transient_attrs: tuple[str, ...] = ()
    #: What ``fit``/``transform`` take: ``"prompts"`` (prompt texts) or ``"results"`` (the training
    #: LLMs' success matrix). A featurizer that reads results needs no prompt text, and a model
    #: built on it cannot score new prompts.
    reads: str = "prompts"
    #: Whether ``fit`` learns from the training prompts: its identity then includes their hash, and
    #: it must be fitted before ``transform``.
    learns_from_texts: bool = False

    def __init__(self, cache_dir: str | None = None):
        self.cache_dir = cache_dir

    def __getstate__(self):
        state = dict(super().__getstate__())  # a copy: object.__getstate__ returns the live __dict__
        for name in self.transient_attrs:
            state.pop(name, None)
        return state

    def inputs(self, results, ids: Sequence[str], train_llms: Sequence[str] | None = None) -> list[str]:
        """What :meth:`fit` and :meth:`transform` take for the instances ``ids``: their prompts.

        Parameters
        ----------
        results : Results
        ids : sequence of str
            Instance ids.
        train_llms : sequence of str, optional
            The training LLMs (read by featurizers whose :attr:`reads` is ``"results"``).

        Returns
        -------
        list of str, length len(ids)
        """
        return results.prompts(list(ids))  # names the data sets without prompt text, if any

    def fit(self, texts: Sequence[str], y=None) -> "Featurizer":
        """Learn from the training prompts (no-op for pretrained models)."""
        from assessors.features.cache import texts_hash

        texts = list(texts)
        self.fit_hash_ = texts_hash(texts) if self.learns_from_texts else ""
        self._fit(texts)
        return self

    def _fit(self, texts: list[str]) -> None:  # noqa: B027 - optional hook
        pass

    def transform(self, texts: Sequence[str]) -> np.ndarray:
        """Features of shape (n_texts, dim), float32."""
        from assessors.features.cache import EmbeddingCache

        if self.learns_from_texts:
            # Without this, an unfitted featurizer could hit a cache entry keyed by an empty fit hash.
            check_is_fitted(self, "fit_hash_",
                            msg=f"{type(self).__name__} learns from the training prompts: call fit(texts) first")
        texts = list(texts)
        if not self.cache_dir:
            return np.asarray(self._transform(texts), dtype=np.float32)
        cache = EmbeddingCache(self.cache_dir, self.identity(),
                               progress=bool(getattr(self, "show_progress", True)))  # the featurizer's switch, if any
        return cache.get_or_compute(texts, self._transform)

    def fit_transform(self, texts: Sequence[str], y=None) -> np.ndarray:
        return self.fit(texts).transform(texts)

    def warm_up(self) -> None:
        """Prepare whatever the first encodes would otherwise pay for (a server calls it at start-up).

        Nothing by default; a featurizer whose kernels depend on input shapes encodes each shape once.
        """

    @abc.abstractmethod
    def _transform(self, texts: list[str]) -> np.ndarray:
        """Compute features of shape (n_texts, dim) for uncached texts."""

    def identity(self) -> str:
        """Stable string naming this featurizer's output space (cache key).

        It is written to the cache (``identity.txt``), so secrets are redacted: credentials in a
        URL never change the output space.
        """
        from assessors.secrets import redact

        return f"{type(self).__name__}:{redact(self._identity_params())}:{getattr(self, 'fit_hash_', '')}"

    def _identity_params(self) -> dict:
        """The parameters that determine the output space (``get_params`` minus runtime ones)."""
        return {k: v for k, v in sorted(self.get_params().items()) if k not in self.runtime_params}
