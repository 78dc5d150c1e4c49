"""The subgroup-estimator contract: per-(LLM, subgroup) success counts in, estimates and intervals out."""
from __future__ import annotations

import abc
from dataclasses import dataclass

import numpy as np
from sklearn.base import BaseEstimator

from assessors.errors import DataError


def check_counts(successes, trials, group_features=None, assessor_mean=None):
    """Validate and convert the inputs of :meth:`SubgroupEstimator.fit`.

    Returns float arrays ``(successes, trials, group_features, assessor_mean)``.
    """
    s = np.asarray(successes, dtype=float)
    n = np.asarray(trials, dtype=float)
    if s.ndim != 2 or s.shape != n.shape:
        raise DataError(f"successes {s.shape} and trials {n.shape} must be 2-d arrays of the same shape (n_llms, n_groups)")
    if np.isnan(s).any() or np.isnan(n).any():
        raise DataError("successes/trials contain NaN; drop unobserved cells before estimating")
    empty = np.argwhere(n < 1)
    if empty.size:
        r, c = empty[0]
        raise DataError(f"LLM row {r} has no graded item in subgroup column {c}: grade at least one item of every "
                        "subgroup for every LLM (min_per_group >= 1), or drop that subgroup or LLM")
    bad = np.argwhere((s < 0) | (s > n))
    if bad.size:
        r, c = bad[0]
        raise DataError(f"invalid counts at LLM row {r}, subgroup column {c}: {s[r, c]} successes of {n[r, c]} trials")
    if group_features is not None:
        group_features = np.asarray(group_features, dtype=float)
        if group_features.ndim != 2 or group_features.shape[0] != s.shape[1]:
            raise DataError(f"group_features has shape {group_features.shape}; expected ({s.shape[1]}, d)")
    if assessor_mean is not None:
        assessor_mean = np.asarray(assessor_mean, dtype=float)
        if assessor_mean.shape != s.shape:
            raise DataError(f"assessor_mean has shape {assessor_mean.shape}; expected {s.shape}")
    return s, n, group_features, assessor_mean


def dt_variance(successes: np.ndarray, trials: np.ndarray) -> np.ndarray:
    """Plug-in variance of the subgroup mean, ``p(1-p)/n`` with ``p = (k+1)/(n+2)``.

    The add-one proportion keeps the variance positive when a subgroup sample is all
    successes or all failures, which is common at n = 10 and would otherwise give zero-width
    intervals and full weight on the direct estimate.
    """
    p = (successes + 1.0) / (trials + 2.0)
    return p * (1.0 - p) / trials


@dataclass(frozen=True)
class ItemAnswers:
    """Item-level answers behind the counts, for prior models that work per item.

    Attributes
    ----------
    sample : ndarray of shape (n_llms, n_items)
        Each LLM's 0/1 answers on its sampled items, NaN elsewhere; its per-subgroup sums are the
        ``successes`` passed beside it.
    codes : ndarray of shape (n_items,)
        Subgroup of each item, ints in ``[0, n_groups)``.
    full : ndarray of shape (n_llms, n_items), optional
        Every LLM's answers on every item, for fitting item parameters on the *other* LLMs only
        (a target's own row never enters its prior); None fits them on the other LLMs' samples.
    """

    sample: np.ndarray
    codes: np.ndarray
    full: np.ndarray | None = None


class SubgroupEstimator(BaseEstimator, abc.ABC):
    """Estimates each LLM's accuracy on each subgroup from a few graded items per subgroup.

    Subclasses implement :meth:`_fit`, returning ``(estimate, lower, upper)`` arrays of shape
    (n_llms, n_groups); ``lower``/``upper`` are NaN for estimators without intervals.
    """

    def fit(self, successes, trials, group_features=None, assessor_mean=None,
            answers: ItemAnswers | None = None) -> "SubgroupEstimator":
        """Estimate subgroup accuracies.

        Parameters
        ----------
        successes, trials : array of shape (n_llms, n_groups)
            Number of successes and of graded items per (LLM, subgroup) cell.
        group_features : array of shape (n_groups, d), optional
            Subgroup descriptors (e.g. the mean prompt embedding of each subgroup).
        assessor_mean : array of shape (n_llms, n_groups), optional
            An assessor's mean predicted success over each subgroup's prompts.
        answers : ItemAnswers, optional
            The item-level answers behind the counts (needed by the latent prior only).

        Returns
        -------
        self
            With ``estimate_``, ``lower_``, ``upper_`` of shape (n_llms, n_groups).
        """
        s, n, x, a = check_counts(successes, trials, group_features, assessor_mean)
        est, lo, hi = self._fit(s, n, x, a, answers)
        self.estimate_ = np.clip(est, 0.0, 1.0)
        self.lower_, self.upper_ = lo, hi
        return self

    @abc.abstractmethod
    def _fit(self, successes, trials, group_features, assessor_mean, answers=None):
        """Return ``(estimate, lower, upper)``, each of shape (n_llms, n_groups)."""
