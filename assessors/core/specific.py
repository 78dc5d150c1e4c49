"""The specific assessor: one classifier per LLM, trained on that LLM's graded results.

:class:`SpecificAssessor` is the family (:class:`~assessors.core.protocol.Assessor`): an LLM's state
is an :class:`LLMClassifier` fitted on its evidence, so "specific" is a classifier fitted on an LLM's
training answers and "reference only" one fitted on its reference answers.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.model_selection import StratifiedKFold
from sklearn.utils.validation import check_is_fitted, has_fit_parameter

from assessors.core.evidence import Evidence
from assessors.core.protocol import Assessor

if TYPE_CHECKING:  # xgboost is imported by the first fit that shares bins, not by importing the family
    from assessors.classifiers.binned_xgb import BinnedRows

log = logging.getLogger(__name__)
_BINS_LOCK = threading.Lock()  # the specific assessors' shared bins: one per prompt matrix, made once


class ConstantClassifier(BaseEstimator):
    """Predicts the training base rate (for an LLM whose labels are all one class)."""

    def fit(self, X, y):
        self.rate_ = float(np.mean(y)) if len(y) else 0.5
        return self

    def predict_proba(self, X):
        p = np.full(len(X), self.rate_, dtype=np.float32)
        return np.stack([1 - p, p], axis=1)


class LLMClassifier(BaseEstimator):
    """One LLM's classifier on prompt features; classifier and hyperparameters by validation AUC.

    Parameters
    ----------
    classifiers : dict of str -> assessors.classifiers.grid.ParamGrid
        Candidate grids (e.g. L2 logistic regression and XGBoost); all their candidates compete.
    cv : int
        Folds of stratified cross-validation used to choose when no validation set is
        given (e.g. the "reference only" baseline, which sees ~100 labelled prompts).
    seed : int
        Seed of the CV folds.
    n_jobs : int, optional
        Threads for every candidate that has a configured ``n_jobs`` (e.g. XGBoost), overriding
        the grid's value: set when several LLMs are fitted at once, so that the machine is not
        oversubscribed. None keeps each grid's own setting.
    """

    def __init__(self, classifiers, cv: int = 3, seed: int = 0, n_jobs: int | None = None):
        self.classifiers = classifiers
        self.cv = cv
        self.seed = seed
        self.n_jobs = n_jobs

    def _candidates(self):
        grids = self.classifiers.values() if isinstance(self.classifiers, Mapping) else [self.classifiers]
        cands = [c for g in grids for c in g.candidates()]
        if self.n_jobs is not None:
            for _, est in cands:
                # only where a thread count is configured (sklearn>=1.8 warns on LogisticRegression's)
                if est.get_params().get("n_jobs") is not None:
                    est.set_params(n_jobs=int(self.n_jobs))
        return cands

    def fit(self, X: np.ndarray, y: np.ndarray, X_val=None, y_val=None, bins: BinnedRows | None = None
            ) -> "LLMClassifier":
        """Fit on one LLM's results.

        Parameters
        ----------
        X : ndarray of shape (n, d)
            Features of the LLM's training prompts.
        y : ndarray of shape (n,)
            Success (0/1); NaN cells are dropped.
        X_val, y_val : ndarray of shape (m, d) and (m,), optional
            Validation prompts for choosing the classifier; without them, ``cv``-fold CV.
        bins : BinnedRows, optional
            Histogram cut points (and binned rows) shared with the other LLMs fitted on the same prompts,
            for the candidates whose ``fit`` takes ``bins``; cut on the prompts of ``X``, the fits are those
            without them.
        """
        X, y = _observed(X, y)
        if len(np.unique(y)) < 2:
            self.classifier_, self.classifier_name_, self.val_auc_ = ConstantClassifier().fit(X, y), "constant", np.nan
            return self
        cands = self._candidates()
        if X_val is not None:
            X_val, y_val = _observed(X_val, y_val)
        scores = [(score, name, fitted) for name, est in cands
                  for score, fitted in [self._score(est, X, y, X_val, y_val, bins, only=len(cands) == 1)]]
        if len(cands) > 1 and all(np.isnan(t[0]) for t in scores):
            log.warning("specific assessor: no usable validation score (validation success constant and too few "
                        "of each class for %d-fold CV); fell back to the first candidate classifier, %s",
                        self.cv, scores[0][1])
        best = max(scores, key=lambda t: -np.inf if np.isnan(t[0]) else t[0])
        self.val_auc_, self.classifier_name_ = best[0], best[1]
        self.classifier_ = best[2] if best[2] is not None else _fit(dict(cands)[best[1]], X, y, bins)
        return self

    def _score(self, est, X, y, X_val, y_val, bins, only: bool):
        """``(AUC or NaN, the fitted candidate or None)`` of one candidate: on the validation prompts when
        their success varies, else by ``cv``-fold CV; NaN when ``only`` (one candidate needs no score) or when
        a class has too few rows for two folds."""
        from assessors.metrics import auc

        if X_val is not None and len(np.unique(y_val)) > 1:
            fitted = _fit(est, X, y, bins)
            return auc(y_val, fitted.predict_proba(X_val)[:, 1]), fitted
        n_splits = int(min(self.cv, np.bincount(y.astype(int)).min()))
        if only or n_splits < 2:
            return np.nan, None
        folds = StratifiedKFold(n_splits, shuffle=True, random_state=self.seed).split(X, y)
        aucs = [auc(y[te], clone(est).fit(X[tr], y[tr]).predict_proba(X[te])[:, 1]) for tr, te in folds]
        return float(np.nanmean(aucs)), None

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        """P(success) of shape (n,) for prompts ``X`` (n, d): the positive column only, not (n, 2)."""
        check_is_fitted(self, "classifier_", msg="LLMClassifier is not fitted")
        return self.classifier_.predict_proba(np.asarray(X, dtype=np.float32))[:, 1].astype(np.float32)


class SpecificAssessor(Assessor, BaseEstimator):
    """The specific family: one :class:`LLMClassifier` per LLM, fitted on that LLM's evidence.

    Parameters
    ----------
    classifiers, cv, seed, n_jobs
        As :class:`LLMClassifier` (each LLM's classifier gets them).

    Attributes
    ----------
    reference_features_ : ndarray of shape (n_ref, d)
        The reference prompts (what :meth:`describe_reference` and :meth:`predict_proba` fit on).
    n_training_llms_ : int
        Training LLMs seen by :meth:`fit`. Nothing is shared between LLMs, so ``fit`` learns no model:
        each LLM, known or new, is described on demand (:meth:`describe_known`, :meth:`describe`).
    """

    family_name = "specific"

    def __init__(self, classifiers, cv: int = 3, seed: int = 0, n_jobs: int | None = None):
        self.classifiers = classifiers
        self.cv = cv
        self.seed = seed
        self.n_jobs = n_jobs

    def _llm_classifier(self) -> LLMClassifier:
        return LLMClassifier(self.classifiers, cv=self.cv, seed=self.seed, n_jobs=self.n_jobs)

    def _candidates(self):
        """The candidate classifiers each LLM's classifier chooses from (``[(name, estimator)]``)."""
        return self._llm_classifier()._candidates()

    def fit(self, X: np.ndarray, S: np.ndarray, ref_index: np.ndarray, validation=None) -> "SpecificAssessor":
        """Keep the reference prompts ``X[ref_index]`` (X: (n, d), S: (n_llms, n)); ``validation`` is
        not used (each LLM's classifier is chosen on its own validation answers, :meth:`describe`)."""
        self.reference_features_ = np.asarray(X, dtype=np.float32)[np.asarray(ref_index, dtype=int)]
        self.n_training_llms_ = int(np.atleast_2d(S).shape[0])
        return self

    def describe(self, evidence: Evidence, validation: Evidence | None = None) -> LLMClassifier:
        """One LLM's classifier fitted on its ``evidence``; ``validation`` (its answers on other prompts)
        chooses the classifier, else ``cv``-fold cross-validation on the evidence. Needs no :meth:`fit`:
        no model is shared between LLMs (after it, the evidence's feature width is checked). LLMs whose
        evidence answers every prompt of the same feature matrix share its histogram bins (the fits
        are those without them)."""
        X, y = self.check_evidence(evidence).answered()
        X_val, y_val = self.check_evidence(validation).answered() if validation is not None else (None, None)
        bins = self._shared_bins(evidence.X) if len(y) == evidence.n_items else None
        return self._llm_classifier().fit(X, y, X_val, y_val, bins=bins)

    def _shared_bins(self, X: np.ndarray) -> BinnedRows:
        """The bins of prompt matrix ``X`` (n, d), shared by every LLM described on this very matrix: the
        last one seen (a per-LLM column describes all its LLMs on one), made once, kept by identity."""
        from assessors.classifiers.binned_xgb import BinnedRows

        with _BINS_LOCK:
            seen = getattr(self, "_bins", None)
            if seen is None or seen[0] is not X:
                self._bins = seen = (X, BinnedRows(X))  # X kept: its id cannot pass to another matrix
            return seen[1]

    def __getstate__(self):
        state = super().__getstate__()
        state.pop("_bins", None)  # a cache of binned prompts (and thread locks): not part of the model
        return state

    def describe_reference(self, R: np.ndarray) -> list[LLMClassifier]:
        """One classifier per row of ``R`` (k, n_ref), fitted on the reference answers ("reference only")."""
        check_is_fitted(self, "reference_features_", msg="SpecificAssessor is not fitted")
        return [self.describe(Evidence(self.reference_features_, r)) for r in np.atleast_2d(R)]

    def predict_state(self, X: np.ndarray, state: LLMClassifier) -> tuple[np.ndarray, None]:
        """``(p (m,), None)`` from the LLM's classifier; no spread."""
        return state.predict_proba(X), None

    def predict_proba(self, X: np.ndarray, R: np.ndarray) -> np.ndarray:
        """P(success) (k, m) (or (m,) for one vector) of LLMs with reference answers ``R`` (k, n_ref),
        each from its own classifier on its reference answers, as :meth:`GenericAssessor.predict_proba`."""
        R = np.asarray(R, dtype=np.float64)
        P = self.predict_states(X, self.describe_reference(R))[0]
        return P[0] if R.ndim == 1 else P


def _observed(X, y):
    X = np.asarray(X, dtype=np.float32)
    y = np.asarray(y, dtype=np.float32)
    keep = ~np.isnan(y)
    return (X, y) if keep.all() else (X[keep], y[keep])


def _fit(est, X: np.ndarray, y: np.ndarray, bins: BinnedRows | None):
    """A fitted clone of ``est`` on ``(X, y)``, binned with ``bins`` when it takes them."""
    if bins is not None and has_fit_parameter(est, "bins"):
        return clone(est).fit(X, y, bins=bins)
    return clone(est).fit(X, y)
