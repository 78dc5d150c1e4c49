"""The specific assessor: one classifier per LLM, trained on that LLM's graded results."""
from __future__ import annotations

import logging
from collections.abc import Mapping

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.model_selection import StratifiedKFold
from sklearn.utils.validation import check_is_fitted


log = logging.getLogger(__name__)


class ConstantClassifier(BaseEstimator):
    """Predicts the training base rate (for an LLM whose labels are all one class)."""

    def fit(self, X, y):
        self.rate_ = float(np.mean(y)) if len(y) else 0.5
        return self

    def predict_proba(self, X):
        p = np.full(len(X), self.rate_, dtype=np.float32)
        return np.stack([1 - p, p], axis=1)


class SpecificAssessor(BaseEstimator):
    """Per-LLM classifier on prompt features; classifier and hyperparameters by validation AUC.

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

    def fit(self, X: np.ndarray, y: np.ndarray, X_val=None, y_val=None) -> "SpecificAssessor":
        """Fit on one LLM's results.

        Parameters
        ----------
        X : ndarray of shape (n, d)
            Features of the LLM's training prompts.
        y : ndarray of shape (n,)
            Success (0/1); NaN cells are dropped.
        X_val, y_val : ndarray of shape (m, d) and (m,), optional
            Validation prompts for choosing the classifier; without them, ``cv``-fold CV.
        """
        from assessors.metrics import auc

        X, y = _observed(X, y)
        if len(np.unique(y)) < 2:
            self.classifier_, self.classifier_name_, self.val_auc_ = ConstantClassifier().fit(X, y), "constant", np.nan
            return self
        cands = self._candidates()
        if X_val is not None:
            X_val, y_val = _observed(X_val, y_val)
        scores = []
        for name, est in cands:
            if X_val is not None and len(np.unique(y_val)) > 1:
                fitted = clone(est).fit(X, y)
                scores.append((auc(y_val, fitted.predict_proba(X_val)[:, 1]), name, fitted))
            elif len(cands) == 1:
                scores.append((np.nan, name, None))
            else:
                n_splits = int(min(self.cv, np.bincount(y.astype(int)).min()))
                if n_splits < 2:
                    scores.append((np.nan, name, None))
                    continue
                folds = StratifiedKFold(n_splits, shuffle=True, random_state=self.seed).split(X, y)
                aucs = [auc(y[te], clone(est).fit(X[tr], y[tr]).predict_proba(X[te])[:, 1]) for tr, te in folds]
                scores.append((float(np.nanmean(aucs)), name, None))
        if len(cands) > 1 and all(np.isnan(t[0]) for t in scores):
            log.warning("specific assessor: no usable validation score (validation success constant and too few "
                        "of each class for %d-fold CV); fell back to the first candidate classifier, %s",
                        self.cv, scores[0][1])
        best = max(scores, key=lambda t: -np.inf if np.isnan(t[0]) else t[0])
        self.val_auc_, self.classifier_name_ = best[0], best[1]
        self.classifier_ = best[2] if best[2] is not None else clone(dict(cands)[best[1]]).fit(X, y)
        return self

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        """P(success) of shape (n,) for prompts ``X`` (n, d): the positive column only, not (n, 2)."""
        check_is_fitted(self, "classifier_", msg="SpecificAssessor is not fitted")
        return self.classifier_.predict_proba(np.asarray(X, dtype=np.float32))[:, 1].astype(np.float32)


def _observed(X, y):
    X = np.asarray(X, dtype=np.float32)
    y = np.asarray(y, dtype=np.float32)
    keep = ~np.isnan(y)
    return X[keep], y[keep]
