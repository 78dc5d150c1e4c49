"""Choose the fallback for prompts unlike the training prompts, on groups of training prompts held out.

Validation prompts come from the training population, so they cannot tell which predictor transfers to
an unseen task. :class:`OODFallbackValidation` simulates one: the training prompts' groups (subtasks)
are dealt into folds; per fold the assessor and the population model are refitted on the other folds,
and each validation LLM, described by ``n_reference`` random answers outside the fold, is scored on the
fold by every candidate. The central intervals of each candidate's AUCs and accuracy errors (realised minus
mean prediction) are the bands a report gives when it applies that candidate to such prompts. No test
prompt or test LLM is read.

The choice (:func:`choose_fallback`). By default (``criterion="mean"``) it is the candidate with the highest
mean AUC over all (fold, validation LLM) pairs. ``criterion="worst_fold"`` ranks by the mean AUC on each
candidate's worst fold (ties: the mean): each held-out fold stands for one unseen task, and a mean over folds
hides a candidate inverted on one of them. On the task hold-outs of ``docs/ood_sweep.md`` the two rankings'
worst folds were near ties and the worst-fold choice served lower AUCs than the mean's, so it is not the
default. The ``flat`` candidate (no ranking, AUC 0.5) is chosen only when every other candidate's criterion
value is at most 0.5: when the held-out tasks show that no ranking transfers.
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
from assessors.errors import ConfigError
from assessors.trust.fallbacks import FLAT_NAME, check_fallback, fallback_predictor

log = logging.getLogger(__name__)

#: How :func:`choose_fallback` ranks the candidates: the mean AUC, or the worst fold's mean AUC.
CRITERIA = ("mean", "worst_fold")


def choose_fallback(mean_auc: dict, fold_auc: dict, criterion: str = "mean") -> str | None:
    """The candidate to serve on an unseen task (None: no candidate has a finite AUC).

    Parameters
    ----------
    mean_auc : dict of str to float
        Each candidate's mean AUC over its (fold, validation LLM) pairs (NaN or None: none finite).
    fold_auc : dict of str to list of float
        Each candidate's mean AUC per held-out fold (NaN or None: none finite on that fold); a stored
        :meth:`OODFallbackValidation.record`'s ``mean_auc`` and ``fold_auc`` as they are.
    criterion : {"mean", "worst_fold"}
        Rank by the mean AUC, or by the lowest finite fold mean (ties: the mean AUC).

    The ``flat`` candidate is chosen only when every other candidate with a finite value has one of at most
    0.5 (see the module docstring); otherwise it is never chosen.
    """
    if criterion not in CRITERIA:
        raise ConfigError(f"unknown OOD fallback criterion {criterion!r}; choose one of {list(CRITERIA)}")

    def value(c):
        folds, mean = np.asarray(fold_auc.get(c, []), dtype=np.float64), np.float64(_nanmean([mean_auc[c]]))
        worst = np.nanmin(folds) if np.isfinite(folds).any() else np.nan
        return (worst if criterion == "worst_fold" else mean), mean

    values = {c: value(c) for c in mean_auc if c != FLAT_NAME}
    ranked = {c: v for c, v in values.items() if np.isfinite(v).all()}
    if FLAT_NAME in mean_auc and (not ranked or max(v[0] for v in ranked.values()) <= 0.5):
        return FLAT_NAME
    return max(ranked, key=ranked.get) if ranked else None


class OODFallbackValidation(BaseEstimator):
    """AUC of each candidate fallback on held-out groups of training prompts; the one to serve on an unseen task.

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
    criterion : {"mean", "worst_fold"}
        Choose by the mean AUC or by the worst fold's mean AUC (ties: the mean) (:func:`choose_fallback`; the
        module docstring says why the mean is the default).
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

    def __init__(self, candidates: Sequence[str] = ("releveled", "reference_only", "population", "flat"),
                 n_folds: int = 3, n_reference: int = 100, default: str = "reference_only",
                 criterion: str = "mean", level: float = 0.9, seed: int = 0, threads: int | None = 1,
                 progress: bool = True):
        self.candidates = candidates
        self.n_folds = n_folds
        self.n_reference = n_reference
        self.default = default
        self.criterion = criterion
        self.level = level
        self.seed = seed
        self.threads = threads
        self.progress = progress

    def fit(self, make_assessor: Callable, population, X, S_train, S_val, groups) -> "OODFallbackValidation":
        """Score the candidates; ``choice_`` is the one :func:`choose_fallback` chooses.

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
        choose_fallback({}, {}, self.criterion)  # an unknown criterion fails before the refits
        X, S_train, S_val = np.asarray(X, np.float32), np.asarray(S_train, np.float64), np.asarray(S_val, np.float64)
        groups = np.asarray(groups, dtype=str)
        names = np.unique(groups)
        self.n_groups_, self.folds_, self.mean_auc_, self.fold_auc_ = len(names), [], {}, {}
        self.aucs_, self.errors_ = {c: [] for c in self.candidates}, {c: [] for c in self.candidates}
        self.pair_folds_ = []  # the fold of each (fold, validation LLM) pair, in the order of aucs_
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
                self._fold(make_assessor, population, X, S_train, S_val, fold == f, rng, f)
                self.folds_.append(sorted(g for g, v in fold_of.items() if v == f))
        how = "worst fold's mean AUC" if self.criterion == "worst_fold" else "mean AUC"
        return self._choose(f"{how} on {k} held-out folds of {len(names)} training-prompt groups", k)

    def _choose(self, how: str, k: int) -> "OODFallbackValidation":
        """``choice_`` by :func:`choose_fallback` over ``k`` folds (the default when no AUC is finite)."""
        self.mean_auc_ = {c: _nanmean(v) for c, v in self.aucs_.items()}
        at = np.asarray(self.pair_folds_)
        self.fold_auc_ = {c: [_nanmean(np.asarray(v, dtype=np.float64)[at == f]) for f in range(k)]
                          for c, v in self.aucs_.items()}
        choice = choose_fallback(self.mean_auc_, self.fold_auc_, self.criterion)
        self.choice_ = self.default if choice is None else choice
        self.chosen_by_ = how if choice is not None else "stated default (no finite AUC on held-out groups)"
        log.info("OOD fallback: %s (%s; mean AUC %s; per fold %s)", self.choice_, self.chosen_by_,
                 {c: round(v, 4) for c, v in self.mean_auc_.items()},
                 {c: [round(a, 4) for a in v] for c, v in self.fold_auc_.items()})
        return self

    def _fold(self, make_assessor, population, X, S_train, S_val, out, rng, f: int) -> None:
        """Refit on the prompts outside ``out`` (n,) and record each candidate's AUC on ``out`` (fold ``f``)."""
        inside = np.flatnonzero(~out)
        ref = np.sort(rng.choice(inside, min(int(self.n_reference), len(inside)), replace=False))
        assessor = make_assessor().fit(X[inside], S_train[:, inside], np.searchsorted(inside, ref))
        fitted = clone(population).fit(X[inside], S_train[:, inside]) if population is not None else None
        for s in S_val:
            y, s_out = s[ref], s[out]
            seen = np.isfinite(s_out)
            if not np.isfinite(y).any() or len(np.unique(s_out[seen])) < 2:
                continue
            self.pair_folds_.append(f)
            for c in self.candidates:
                p_out = np.asarray(fallback_predictor(c, assessor, X[ref], y, population=fitted)(X[out]))
                self.aucs_[c].append(masked_auc(s_out, p_out))
                self.errors_[c].append(float(s_out[seen].mean() - p_out[seen].mean()))

    def _bands(self, values) -> dict[str, list[float]]:
        """Central ``level`` interval of each candidate's per-pair values (candidates with >= 10 finite pairs)."""
        finite = {c: np.asarray(v, dtype=np.float64)[np.isfinite(v)] for c, v in values.items()}
        return {c: list(central_interval(v, self.level)) for c, v in finite.items() if len(v) >= 10}

    def record(self) -> dict:
        """``{choice, chosen_by, criterion, mean_auc, fold_auc, auc_band, accuracy_error_band, level, n_pairs,
        folds}`` (JSON-safe; ``fold_auc``: per candidate, its mean AUC on each of ``folds``), stored with the
        model (the bands: see the module docstring)."""
        check_is_fitted(self, "choice_")
        return {"choice": self.choice_, "chosen_by": self.chosen_by_, "criterion": self.criterion,
                "mean_auc": {c: _finite_or_none(v) for c, v in self.mean_auc_.items()},
                "fold_auc": {c: [_finite_or_none(a) for a in v] for c, v in self.fold_auc_.items()},
                "auc_band": self._bands(self.aucs_), "accuracy_error_band": self._bands(self.errors_),
                "level": float(self.level),
                "n_pairs": {c: int(np.isfinite(v).sum()) for c, v in self.aucs_.items()}, "folds": self.folds_}


def _nanmean(values) -> float:
    """Mean of the finite ``values`` (NaN: none)."""
    v = np.asarray(values, dtype=np.float64)
    return float(np.nanmean(v)) if np.isfinite(v).any() else float("nan")


def _finite_or_none(v: float) -> float | None:
    """``v``, None when not finite (JSON)."""
    return float(v) if np.isfinite(v) else None
