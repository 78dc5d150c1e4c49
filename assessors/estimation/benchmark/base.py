"""The benchmark-estimator contract: full-benchmark accuracy from a target LLM's core-set results.

Usage::

    est = RandomSampling(core_size=50, seed=0).fit(source_success)        # picks est.core_index_
    out = est.estimate(target_success[:, est.core_index_])                # Estimate(point, ci_low, ci_high)

``fit`` sees the *source* LLMs' full results (and optional instance features); it chooses the
core set (uniformly at random unless the method selects its own, e.g. anchor points) or takes
``core_index`` from the caller. ``estimate`` sees only the *target* LLMs' results on that core set.
The decision rules shared by all methods (input checks, imputation, caching) live here once.
"""
from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Callable, ClassVar, Sequence

import numpy as np
from cachetools import LRUCache
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from assessors.core.posterior import evidence_labels
from assessors.errors import ConfigError, DataError
from assessors.estimation.benchmark.fit_cache import load_or_fit
from assessors.memo import FrozenMemo
from assessors.selection.cache import array_digest


@dataclass(frozen=True)
class Estimate:
    """Estimated full-benchmark accuracy of ``k`` target LLMs.

    Attributes
    ----------
    point : ndarray of shape (k,)
    ci_low, ci_high : ndarray of shape (k,) or None
        Confidence interval at level ``1 - alpha`` (None when the method has no CI).
    evidence : ndarray of str, shape (k,), or None
        What the target's core answers support (:data:`assessors.core.posterior.EVIDENCE`):
        ``one_class`` when they are all equal, so any estimate leans on the sources or the prior
        rather than the target; ``ok`` otherwise. Set by :meth:`BenchmarkEstimator.estimate`.
    """

    point: np.ndarray
    ci_low: np.ndarray | None = None
    ci_high: np.ndarray | None = None
    evidence: np.ndarray | None = None


def item_means(S: np.ndarray) -> np.ndarray:
    """Each item's (column's) mean over the rows with a value, 0.5 for an all-NaN item; shape (n_items,)."""
    S = np.asarray(S, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        return np.nanmean(np.where(np.isnan(S).all(0, keepdims=True), 0.5, S), axis=0)


def impute_columns(S: np.ndarray) -> np.ndarray:
    """Fill NaN cells with the item's mean over the other rows (0.5 for all-NaN items)."""
    S = np.asarray(S, dtype=np.float64)
    if not np.isnan(S).any():
        return S
    return np.where(np.isnan(S), item_means(S)[None, :], S)


def impute_rows(Y: np.ndarray) -> np.ndarray:
    """Fill a target's missing core cells with its observed core mean (rows have >= 1 value)."""
    if not np.isnan(Y).any():
        return Y
    return np.where(np.isnan(Y), np.nanmean(Y, axis=1, keepdims=True), Y)


def _nbytes(value: object) -> int:
    """Memory held by a cached value: its arrays' bytes (arrays, tuples of them, fitted estimators)."""
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if isinstance(value, (tuple, list)):
        return sum(_nbytes(v) for v in value)
    if hasattr(value, "__dict__"):
        return sum(_nbytes(v) for v in vars(value).values() if isinstance(v, (np.ndarray, tuple, list)))
    return 64


#: Bytes the per-source-split cache may hold, per process. One MMLU-Pro item correlation matrix takes
#: 0.58 GB (float32), so a cap by count (16 entries) let one process hold many of them; this cap keeps
#: one, which is all a split-trial reuses, and with two harness processes the run within 4 GB.
CACHE_BYTES = 1_000_000_000

# A process-wide cache for expensive per-source-split work (correlations, IRT fits): the harness
# fits several core sizes and methods on the same source split, one trial after another.
_CACHE: LRUCache = LRUCache(maxsize=CACHE_BYTES, getsizeof=lambda v: max(_nbytes(v), 1))


def cached(tag: str, S: np.ndarray, params: tuple, fn: Callable[[], object], disk: bool = True) -> object:
    """``fn()`` memoised on (tag, content hash of ``S``, params): in this process and, inside a
    :func:`~assessors.estimation.benchmark.fit_cache.disk_cache` block, on disk for other processes.
    ``S`` must be the source LLMs' answers (or a function of them alone); ``disk=False`` for values
    cheaper to recompute than to store (e.g. an item correlation matrix)."""
    key = (tag, _digest(S), params)
    if key in _CACHE:
        return _CACHE[key]  # refreshes the key's recency
    val = load_or_fit(key, fn) if disk else fn()
    if _nbytes(val) <= CACHE_BYTES:  # a value larger than the whole cache is used, not kept
        _CACHE[key] = val
    return val


#: Content hashes of read-only source matrices, kept while each lives (any other array is hashed on
#: every call): the harness's source matrix of a split is shared by every method and size. The lambda
#: looks ``array_digest`` up at each call, so a test can count the hashing.
_DIGESTS = FrozenMemo(lambda S: array_digest(S))


def _digest(S: np.ndarray) -> str:
    """:func:`~assessors.selection.cache.array_digest` of ``S`` (memoised while ``S`` lives when it is read-only)."""
    return _DIGESTS.get(S)


def imputed_source(S: np.ndarray) -> np.ndarray:
    """:func:`impute_columns` of a source matrix, read-only and kept per source split (in this process)
    when it has missing cells, so the methods and sizes of a split share one copy and its hash; ``S``
    itself when it has none."""
    if not np.isnan(S).any():
        return S
    return cached("imputed", S, (), lambda: _read_only(impute_columns(S)), disk=False)


def source_float32(S: np.ndarray) -> np.ndarray:
    """A float32 copy of a source matrix, read-only and kept per source split (in this process), so the
    fits that work in float32 share one copy and its hash."""
    return cached("float32", S, (), lambda: _read_only(np.array(S, dtype=np.float32)), disk=False)


def _read_only(A: np.ndarray) -> np.ndarray:
    """``A`` (an array this module made) marked read-only, for a cached value later fits share."""
    A.setflags(write=False)
    return A


def fixed_or_trial(fixed: int | None, seed: int) -> int:
    """A part's seed: ``fixed`` when set (the part then depends on the source split alone and is
    shared by every trial on it), else the trial's ``seed``."""
    return int(seed if fixed is None else fixed)


class BenchmarkEstimator(BaseEstimator, abc.ABC):
    """Estimates a target LLM's full-benchmark accuracy from its results on a core set.

    Parameters
    ----------
    core_size : int
        Number of core items the target LLM is evaluated on.
    seed : int
        Seed for the core set and any randomised fitting.
    alpha : float
        Miscoverage of confidence intervals (0.05 gives 95% intervals).
    """

    #: True when the method chooses its own core set (a caller-given ``core_index`` is an error).
    selects_core: ClassVar[bool] = False
    #: True when ``estimate`` returns confidence intervals.
    has_ci: ClassVar[bool] = False
    #: True when ``_select_core`` needs the raw source matrix (NaN kept, e.g. for an IRT fit that
    #: leaves missing cells out) rather than the item-mean imputed one.
    selects_on_raw: ClassVar[bool] = False

    def __init__(self, core_size: int = 50, seed: int = 0, alpha: float = 0.05):
        self.core_size = core_size
        self.seed = seed
        self.alpha = alpha

    # ------------------------------------------------------------------ fit
    def fit(self, source_success: np.ndarray, features: np.ndarray | None = None,
            core_index: Sequence[int] | None = None, source_llms: Sequence[str] | None = None) -> "BenchmarkEstimator":
        """Fit on source LLMs and fix the core set.

        Parameters
        ----------
        source_success : ndarray of shape (n_source_llms, n_items), float with NaN
        features : ndarray of shape (n_items, d), optional
            Instance features (prompt embeddings), for methods that use them.
        core_index : array of int, optional
            A caller-chosen core set (item positions). Default: the method chooses.
        source_llms : sequence of str, optional
            Names of the source LLMs, used to refuse a target that is also a source.
        """
        S = self._check_source(source_success, features, source_llms)
        m = S.shape[1]
        core_index = self._check_core(core_index, m)
        self.source_llms_ = None if source_llms is None else [str(x) for x in source_llms]
        self.n_items_ = m
        rng = np.random.default_rng(self.seed)
        filled = imputed_source(S)
        if core_index is None:
            core_index = np.asarray(self._select_core(S if self.selects_on_raw else filled, features, rng), dtype=int)
        self.core_index_ = core_index
        self._fit(S, filled, features, rng)
        return self

    def _check_source(self, source_success, features, source_llms) -> np.ndarray:
        """The source matrix as float64 (n_llms, n_items), checked: 2-D, 2+ LLMs each with an
        evaluated item, features row for row."""
        S = np.asarray(source_success, dtype=np.float64)
        if S.ndim != 2:
            raise DataError(f"{type(self).__name__}: source_success must be 2-D (n_llms, n_items), got {S.shape}")
        n, m = S.shape
        if n < 2:
            raise DataError(f"{type(self).__name__}: need at least 2 source LLMs, got {n}")
        empty = np.flatnonzero(np.isnan(S).all(1))
        if empty.size:
            who = [source_llms[i] for i in empty[:5]] if source_llms is not None else empty[:5].tolist()
            raise DataError(f"{type(self).__name__}: source LLM rows {who} have no evaluated item (all missing)")
        if features is not None and len(features) != m:
            raise DataError(f"{type(self).__name__}: features has {len(features)} rows, source_success {m} items")
        return S

    def _check_core(self, core_index, m: int) -> np.ndarray | None:
        """A caller's core set as int positions, checked against ``m`` items (None: the method
        chooses ``core_size`` items, checked too)."""
        if core_index is None:
            if not 1 <= self.core_size <= m:
                raise ConfigError(f"{type(self).__name__}: core_size={self.core_size} but the benchmark has "
                                  f"{m} items; choose 1 <= core_size <= {m}")
            return None
        if self.selects_core:
            raise ConfigError(f"{type(self).__name__} selects its own core set; do not pass core_index")
        core_index = np.asarray(core_index, dtype=int)
        if core_index.size > m or len(np.unique(core_index)) != core_index.size:
            raise ConfigError(f"{type(self).__name__}: core set of {core_index.size} items (unique: "
                              f"{len(np.unique(core_index))}) for a benchmark of {m} items")
        if core_index.size and (core_index.min() < 0 or core_index.max() >= m):
            raise ConfigError(f"{type(self).__name__}: core_index out of range [0, {m})")
        return core_index

    def _select_core(self, S: np.ndarray, features, rng: np.random.Generator) -> np.ndarray:
        """Default core set: ``core_size`` items uniformly at random without replacement."""
        return np.sort(rng.choice(S.shape[1], size=self.core_size, replace=False))

    def _fit(self, S: np.ndarray, filled: np.ndarray, features, rng: np.random.Generator) -> None:
        """Method-specific fitting; ``S`` raw (NaN kept), ``filled`` item-mean imputed."""

    # ------------------------------------------------------------- estimate
    def estimate(self, core_success: np.ndarray, target_llms: Sequence[str] | None = None) -> Estimate:
        """Estimate full-benchmark accuracy.

        Parameters
        ----------
        core_success : ndarray of shape (k, n_core) or (n_core,)
            Target LLMs' results on ``core_index_`` (in that order), NaN where not evaluated.
        target_llms : sequence of str, optional
            Target names; an error is raised if one is also a source LLM.

        Returns
        -------
        Estimate with arrays of shape (k,)
        """
        check_is_fitted(self, "core_index_", msg=f"{type(self).__name__} is not fitted; call fit(source_success) first")
        Y = np.atleast_2d(np.asarray(core_success, dtype=np.float64))
        if Y.shape[1] != self.core_index_.size:
            raise DataError(f"{type(self).__name__}: core_success has {Y.shape[1]} columns, the core set has "
                            f"{self.core_index_.size} items (pass target_success[:, est.core_index_])")
        if target_llms is not None and self.source_llms_ is not None:
            both = sorted(set(map(str, target_llms)) & set(self.source_llms_))
            if both:
                raise DataError(f"{type(self).__name__}: target LLMs {both[:5]} are also source LLMs; "
                                "a target must not be in the source set")
        empty = np.flatnonzero(np.isnan(Y).all(1))
        if empty.size:
            who = [list(target_llms)[i] for i in empty[:5]] if target_llms is not None else empty[:5].tolist()
            raise DataError(f"{type(self).__name__}: target rows {who} have no evaluated core item (all missing)")
        out = self._estimate(Y)
        point = np.clip(out.point, 0.0, 1.0)
        evidence = evidence_labels(Y)
        if out.ci_low is None:
            return Estimate(point, evidence=evidence)
        return Estimate(point, np.clip(out.ci_low, 0.0, 1.0), np.clip(out.ci_high, 0.0, 1.0), evidence)

    @abc.abstractmethod
    def _estimate(self, Y: np.ndarray) -> Estimate:
        """Estimate from core results ``Y`` of shape (k, n_core) (NaN allowed, no all-NaN row)."""
