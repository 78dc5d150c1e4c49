"""Choose the fallback for prompts unlike the training prompts, on groups of training prompts held out.

Validation prompts come from the training population, so they cannot tell which predictor transfers to
an unseen task. :class:`OODFallbackValidation` simulates one: the training prompts' groups (subtasks)
are dealt into folds; per fold the assessor and the population model are refitted on the other folds,
and each validation LLM, described by ``n_reference`` random answers outside the fold, is scored on the
fold by every candidate. The best mean AUC is the choice; the central intervals of each candidate's
AUCs and accuracy errors (realised minus mean prediction) are the bands a report gives when it applies
that candidate to such prompts. No test prompt or test LLM is read.
"""
from __future__ import annotations

import logging
from typing import Callable, Sequence

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.utils.validation import check_is_fitted
from tqdm.auto import tqdm

from assessors.metrics import central_interval, masked_auc
from assessors.threads import thread_limits
from assessors.trust.fallbacks import check_fallback, fallback_predictor

log = logging.getLogger(__name__)


class OODFallbackValidation(BaseEstimator):
    """Mean AUC of each candidate fallback on held-out groups of training prompts; the best one.

    Parameters
    ----------
    candidates : sequence of str
        Fallbacks to compare (:data:`~assessors.trust.fallbacks.FALLBACKS`).
    n_folds : int
        Folds the groups are dealt into (at most the number of groups).
    n_reference : int
        Random answered prompts outside the held-out fold that describe each validation LLM.
    default : str
        The choice with fewer than two groups.
    level : float
        Central coverage of the AUC and accuracy-error bands recorded per candidate.
    seed : int
        Seed of the fold draw and of the reference prompts.
    threads : int or None
        BLAS/OpenMP threads of the refits and scoring (None: the caller's budget). Their matrices are small:
        on two busy cores two threads spin at every barrier and took several times the time of one.
    progress : bool
        Show a progress bar over folds.
    """

    def __init__(self, candidates: Sequence[str] = ("releveled", "reference_only", "population"), n_folds: int = 3,
                 n_reference: int = 100, default: str = "reference_only", level: float = 0.9, seed: int = 0,
                 threads: int | None = 1, progress: bool = True):
        self.candidates = candidates
        self.n_folds = n_folds
        self.n_reference = n_reference
        self.default = default
        self.level = level
        self.seed = seed
        self.threads = threads
        self.progress = progress

    def fit(self, make_assessor: Callable, population, X, S_train, S_val, groups) -> "OODFallbackValidation":
        """Score the candidates; ``choice_`` is the best.

        Parameters
        ----------
        make_assessor : callable
            ``make_assessor()`` -> an unfitted latent assessor (the configured one).
        population : PopulationDifficulty or None
            Unfitted population model (cloned per fold); None without a ``population`` candidate.
        X, S_train, S_val : ndarray of shape (n, d), (n_train_llms, n), (n_val_llms, n)
            Features of the training prompts; the training and validation LLMs' success on them (0/1, NaN).
        groups : ndarray of shape (n,)
            Group (subtask) of each prompt.
        """
        for kind in (self.default, *self.candidates):
            check_fallback(kind, population)
        X, S_train, S_val = np.asarray(X, np.float32), np.asarray(S_train, np.float64), np.asarray(S_val, np.float64)
        groups = np.asarray(groups, dtype=str)
        names = np.unique(groups)
        self.n_groups_, self.folds_, self.mean_auc_ = len(names), [], {}
        self.aucs_, self.errors_ = {c: [] for c in self.candidates}, {c: [] for c in self.candidates}
        if len(names) < 2 or not len(S_val):
            self.choice_ = self.default
            self.chosen_by_ = (f"stated default ({len(names)} group(s) of training prompts)" if len(names) < 2
                               else "stated default (no validation LLMs)")
            return self
        rng = np.random.default_rng(self.seed)
        k = min(int(self.n_folds), len(names))
        fold_of = dict(zip(rng.permutation(names), np.arange(len(names)) % k))
        fold = np.array([fold_of[g] for g in groups])
        with thread_limits(self.threads):
            for f in tqdm(range(k), desc="OOD fallback folds", disable=not self.progress, leave=False):
                self._fold(make_assessor, population, X, S_train, S_val, fold == f, rng)
                self.folds_.append(sorted(g for g, v in fold_of.items() if v == f))
        return self._choose(f"mean AUC on {k} held-out folds of {len(names)} training-prompt groups")

    def _choose(self, how: str) -> "OODFallbackValidation":
        """``choice_``: the candidate with the highest mean AUC (the default when none is finite)."""
        self.mean_auc_ = {c: float(np.nanmean(v)) if np.isfinite(v).any() else float("nan")
                          for c, v in self.aucs_.items()}
        finite = {c: v for c, v in self.mean_auc_.items() if np.isfinite(v)}
        self.choice_ = max(finite, key=finite.get) if finite else self.default
        self.chosen_by_ = how if finite else "stated default (no finite AUC on held-out groups)"
        log.info("OOD fallback: %s (%s; mean AUC %s)", self.choice_, self.chosen_by_,
                 {c: round(v, 4) for c, v in self.mean_auc_.items()})
        return self

    def _fold(self, make_assessor, population, X, S_train, S_val, out, rng) -> None:
        """Refit on the prompts outside ``out`` (n,) and record each candidate's AUC on ``out``."""
        inside = np.flatnonzero(~out)
        ref = np.sort(rng.choice(inside, min(int(self.n_reference), len(inside)), replace=False))
        assessor = make_assessor().fit(X[inside], S_train[:, inside], np.searchsorted(inside, ref))
        fitted = clone(population).fit(X[inside], S_train[:, inside]) if population is not None else None
        for s in S_val:
            y, s_out = s[ref], s[out]
            seen = np.isfinite(s_out)
            if not np.isfinite(y).any() or len(np.unique(s_out[seen])) < 2:
                continue
            for c in self.candidates:
                p_out = np.asarray(fallback_predictor(c, assessor, X[ref], y, population=fitted)(X[out]))
                self.aucs_[c].append(masked_auc(s_out, p_out))
                self.errors_[c].append(float(s_out[seen].mean() - p_out[seen].mean()))

    def _bands(self, values) -> dict[str, list[float]]:
        """Central ``level`` interval of each candidate's per-pair values (candidates with >= 10 finite pairs)."""
        finite = {c: np.asarray(v, dtype=np.float64)[np.isfinite(v)] for c, v in values.items()}
        return {c: list(central_interval(v, self.level)) for c, v in finite.items() if len(v) >= 10}

    def record(self) -> dict:
        """``{choice, chosen_by, mean_auc, auc_band, accuracy_error_band, level, n_pairs, folds}`` (JSON-safe),
        stored with the model (the bands: see the module docstring)."""
        check_is_fitted(self, "choice_")
        return {"choice": self.choice_, "chosen_by": self.chosen_by_,
                "mean_auc": {c: (v if np.isfinite(v) else None) for c, v in self.mean_auc_.items()},
                "auc_band": self._bands(self.aucs_), "accuracy_error_band": self._bands(self.errors_),
                "level": float(self.level),
                "n_pairs": {c: int(np.isfinite(v).sum()) for c, v in self.aucs_.items()}, "folds": self.folds_}
