"""The generic assessor: one classifier for all LLMs.

Input for an (LLM, prompt) pair = prompt features joined to the LLM's success vector on a
small reference set. A new LLM is characterised by running it on the reference set only: its state
(:class:`~assessors.core.protocol.Assessor`) is that reference vector, read out of its evidence.
"""
from __future__ import annotations

import logging

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, clone
from sklearn.utils.validation import has_fit_parameter
from sklearn.utils.validation import check_is_fitted

from assessors.core.evidence import Evidence, MissingReferenceError, reference_answers, reference_positions
from assessors.core.protocol import Assessor
from assessors.core.rows import PairRows, collapse_pairs, cosine_similarity, observed_pairs
from assessors.errors import DataError
from assessors.tags import capability

log = logging.getLogger(__name__)


class GenericAssessor(Assessor, BaseEstimator):
    """One classifier for all LLMs, conditioned on their reference-set results.

    Parameters
    ----------
    classifier : assessors.classifiers.grid.ParamGrid
        Candidate classifiers; the one with the best average win rate over validation
        LLMs is kept (the paper's model selection), or the first if no validation data.
        A candidate with ``early_stopping_rounds`` (XGBoost) stops adding trees where its
        eval metric on the validation LLMs' pairs stops improving (at its ``n_estimators``
        without validation data).
    instance_features : {"embedding", "similarity", "similarity_interaction", "none"}
        Instance part of each row: the prompt embedding, its cosine similarity to each
        reference prompt, the similarity plus similarity x reference success, or nothing
        but the reference vector is dropped too (``none`` with ``use_reference=False`` is
        not allowed; use ``embedding``).
    use_reference : bool
        False gives the "all train data" baseline: one classifier on pooled training
        LLMs, with no reference vector (so the same prediction for every LLM).
    """

    family_name = "generic"

    def __init__(self, classifier, instance_features: str = "embedding", use_reference: bool = True):
        self.classifier = classifier
        self.instance_features = instance_features
        self.use_reference = use_reference

    # ------------------------------------------------------------------ helpers
    @property
    def _mode(self) -> str:
        return self.instance_features if self.use_reference else "none"

    def _instance_part(self, X: np.ndarray) -> np.ndarray:
        if self.instance_features == "embedding" or not self.use_reference:
            return np.asarray(X, dtype=np.float32)
        return cosine_similarity(X, self.reference_features_)

    def _fill(self, R: np.ndarray) -> np.ndarray:
        R = np.asarray(R, dtype=np.float32)
        if R.ndim != 2 or R.shape[1] != len(self.reference_fill_):
            raise DataError(f"reference results must have shape (n_llms, {len(self.reference_fill_)}), got {R.shape}")
        # an LLM not evaluated on a reference item gets the training LLMs' mean on that item
        return np.where(np.isnan(R), self.reference_fill_[None, :], R).astype(np.float32)

    def _rows(self, X: np.ndarray, R: np.ndarray, S: np.ndarray | None = None):
        inst = self._instance_part(X)
        if S is None:
            li, ii = np.divmod(np.arange(R.shape[0] * X.shape[0]), X.shape[0])
            y = None
        else:
            li, ii, y = observed_pairs(S)
        return PairRows(inst, self._fill(R) if self.use_reference else np.zeros((R.shape[0], 0), np.float32),
                        li, ii, self._mode), y

    # ---------------------------------------------------------------------- fit
    def fit(self, X: np.ndarray, S: np.ndarray, ref_index: np.ndarray, validation=None) -> "GenericAssessor":
        """Fit on training LLMs x training instances.

        Parameters
        ----------
        X : ndarray of shape (n_instances, d)
            Features of the training instances (the reference instances among them).
        S : ndarray of shape (n_llms, n_instances)
            Training LLMs' success (float32, NaN = not evaluated).
        ref_index : ndarray of shape (n_ref,)
            Positions of the reference instances in ``X``/``S``. Their rows are left out
            of the training pairs: there the reference vector would contain the label.
        validation : tuple (X_val (m, d), S_val (k, m), R_val (k, n_ref)), optional
            Validation instances, validation LLMs' success on them and on the reference
            set; used to pick the classifier by average win rate.
        """
        rows, y = self._training_rows(X, S, ref_index)
        candidates = self.classifier.candidates()
        if validation is None:
            # nothing to choose with: fit only the first candidate instead of all of them
            candidates = candidates[:1]
        log.info("generic assessor: %d training pairs x %d features, %d candidate classifiers",
                 len(rows), rows.width, len(candidates))
        fit_kw, jobs = {}, 1
        if self._mode == "none" and all(has_fit_parameter(est, "sample_weight") for _, est in candidates):
            # no reference vector: all LLMs' rows for an instance are equal, so fit one weighted
            # row per (instance, label) -- the same summed loss on ~n_llms x fewer rows
            n_pairs = len(rows)
            idx, y, fit_kw["sample_weight"] = collapse_pairs(rows.inst_idx, y)
            rows = PairRows(rows.inst, rows.ref, np.zeros(len(idx), np.int64), idx, "none")
            log.info("all-train baseline: %d pairs collapsed to %d weighted rows", n_pairs, len(idx))
            budget = candidates[0][1].get_params().get("n_jobs")
            candidates = [(name, _few_rows_threads(_no_row_subsampling(est), len(idx))) for name, est in candidates]
            # the threads a few-rows fit leaves idle fit the other candidates at once (the same trees)
            fewer = candidates[0][1].get_params().get("n_jobs")
            if budget is not None and fewer is not None and int(fewer) > 0:
                jobs = max(1, min(len(candidates), int(budget) // int(fewer)))
        fitted, scores = self._fit_candidates(candidates, rows, y, fit_kw, validation, jobs)
        self._choose(fitted, scores)
        return self

    def _training_rows(self, X, S, ref_index) -> tuple[PairRows, np.ndarray]:
        """Training pairs (all LLMs x the non-reference instances) and their labels; stores the
        reference features and the fill for missing reference cells."""
        X = np.asarray(X, dtype=np.float32)
        S = np.asarray(S, dtype=np.float32)
        ref_index = np.asarray(ref_index, dtype=int)
        self.reference_features_ = X[ref_index]
        R = S[:, ref_index]
        fill = np.nanmean(np.where(np.isnan(R).all(0, keepdims=True), 0.5, R), axis=0)
        self.reference_fill_ = np.nan_to_num(fill, nan=0.5).astype(np.float32)
        keep = np.setdiff1d(np.arange(X.shape[0]), ref_index)
        rows, y = self._rows(X[keep], R, S[:, keep])
        if len(np.unique(y)) < 2:
            raise DataError(f"generic assessor: training labels are all {y[0]!r}; nothing to learn")
        return rows, y

    def _fit_candidates(self, candidates, rows: PairRows, y, fit_kw: dict, validation,
                        jobs: int = 1) -> tuple[list, dict]:
        """Fit each candidate classifier, ``jobs`` at once in threads; with validation data and a choice
        to make, score each (a Series of per-validation-LLM AUCs). Returns ``[(name, fitted)]`` and
        ``{name: scores}``."""
        from joblib import Parallel, delayed

        dense = None if _is_streaming(candidates) else rows.to_array()
        stop_set = None
        todo = []
        for name, est in candidates:
            est, kw = clone(est), dict(fit_kw)
            if _early_stops(est):
                if validation is None:
                    # nothing to stop on: the cap of trees, as without early stopping
                    est.set_params(early_stopping_rounds=None)
                else:
                    stop_set = stop_set if stop_set is not None else self._eval_set(*validation)
                    kw.update(eval_set=[stop_set], verbose=False)
            if dense is not None and self._mode in ("embedding", "similarity") and has_fit_parameter(est, "bins"):
                from assessors.classifiers.binned_xgb import BinnedRows

                kw["bins"] = BinnedRows(*_bin_sample(rows))
            todo.append((name, est, rows if dense is None or _streams(est) else dense, kw))
        # XGBoost and scikit-learn release the GIL while fitting
        fitted = Parallel(n_jobs=min(jobs, len(todo)), backend="threading")(
            delayed(lambda name, est, data, kw: (name, est.fit(data, y, **kw)))(*t) for t in todo)
        scores = {}
        if validation is not None and len(candidates) > 1:
            for name, est in fitted:
                self.classifier_ = est
                scores[name] = self._validation_aucs(*validation)
        return fitted, scores

    def _eval_set(self, X_val, S_val, R_val) -> tuple[np.ndarray, np.ndarray]:
        """The validation LLMs' answered pairs ``(rows (n_pairs, width), labels (n_pairs,))``: what a
        classifier with ``early_stopping_rounds`` stops on (its eval metric on them, e.g. log loss)."""
        rows, y = self._rows(np.asarray(X_val, dtype=np.float32), np.asarray(R_val, dtype=np.float32),
                             np.asarray(S_val, dtype=np.float32))
        return rows.to_array(), y

    def _choose(self, fitted: list, scores: dict) -> None:
        """Keep the candidate with the best validation win rate (the first without usable scores)."""
        table = pd.DataFrame(scores).T
        if scores and not table.notna().to_numpy().any():
            # every validation LLM is constant on the validation instances: no AUC to choose by
            log.warning("generic assessor: no usable validation score (every one of the %d validation LLMs has "
                        "constant success on the validation instances, so AUC is undefined); fell back to the "
                        "first candidate classifier, %s", table.shape[1], fitted[0][0])
            scores = {}
        if scores:
            from assessors.metrics import rank_by_win_rate

            # candidates x validation LLMs; ties in win rate go to the higher mean validation AUC
            self.selection_ = rank_by_win_rate(table)
            best = self.selection_.index[0]
        else:
            best = fitted[0][0]
            self.selection_ = None
        self.classifier_name_ = best
        self.classifier_ = dict(fitted)[best]

    def _validation_aucs(self, X_val, S_val, R_val) -> pd.Series:
        from assessors.metrics import per_llm_auc

        # ungraded cells do not count
        return pd.Series(per_llm_auc(S_val, self.predict_proba(X_val, R_val)))

    # ------------------------------------------------------------------ predict
    def predict_proba(self, X: np.ndarray, R: np.ndarray) -> np.ndarray:
        """P(success) for each LLM and prompt.

        Not scikit-learn's (n, 2) class probabilities: one probability per (LLM, prompt), shape
        (k, m). The name stays because the MLflow pyfunc, the serving engine and every task call
        the assessors (generic, latent) through it.

        Parameters
        ----------
        X : ndarray of shape (m, d)
            Prompt features.
        R : ndarray of shape (k, n_ref) or (n_ref,)
            Reference-set success vectors of ``k`` LLMs (NaN where not evaluated).

        Returns
        -------
        ndarray of shape (k, m) (or (m,) for a single vector)
        """
        check_is_fitted(self, "classifier_", msg="GenericAssessor is not fitted")
        R = np.asarray(R, dtype=np.float32)
        single = R.ndim == 1
        R = R[None, :] if single else R
        X = np.asarray(X, dtype=np.float32)
        if not self.use_reference:
            # no reference vector: the prediction is the same for every LLM; score the prompts once
            p = self._predict_rows(X, R[:1])
            return p[0] if single else np.repeat(p, R.shape[0], axis=0)
        p = self._predict_rows(X, R)
        return p[0] if single else p

    # ----------------------------------------------------------------- protocol
    def describe(self, evidence: Evidence) -> np.ndarray:
        """The reference vector (n_ref,) of one LLM: its answers on the reference prompts, read out of
        ``evidence`` by their features (the "all train data" baseline needs none: the training mean).

        Raises
        ------
        MissingReferenceError
            A reference prompt is not among the evidence items (the message names its position).
        """
        check_is_fitted(self, "classifier_", msg="GenericAssessor is not fitted")
        self.check_evidence(evidence)
        if not self.use_reference:
            return self.reference_fill_.astype(np.float64)
        return reference_answers(evidence, self.reference_features_, type(self).__name__)

    def describe_known(self, X: np.ndarray, S: np.ndarray, ref_index: np.ndarray | None = None) -> list[np.ndarray]:
        """The reference vectors of ``k`` LLMs: their answers ``S`` (k, n) at ``ref_index`` or, when not
        given, on the reference prompts found among ``X`` (n, d) by their features, once for all of them."""
        check_is_fitted(self, "classifier_", msg="GenericAssessor is not fitted")
        S = np.atleast_2d(np.asarray(S, dtype=np.float32))
        if not self.use_reference:
            return [self.reference_fill_.astype(np.float64) for _ in S]
        if ref_index is None:
            ref_index = reference_positions(X, self.reference_features_, type(self).__name__)
        return self.describe_reference(S[:, np.asarray(ref_index, dtype=int)])

    def describe_reference(self, R: np.ndarray) -> list[np.ndarray]:
        """The reference vectors themselves, one (n_ref,) per row of ``R`` (k, n_ref), checked."""
        check_is_fitted(self, "classifier_", msg="GenericAssessor is not fitted")
        R = np.atleast_2d(np.asarray(R, dtype=np.float32))
        self._fill(R)  # the shape check
        return list(R)

    def predict_state(self, X: np.ndarray, state: np.ndarray) -> tuple[np.ndarray, None]:
        """``(p (m,), None)``: :meth:`predict_proba` for one reference vector; no spread."""
        return self.predict_proba(X, np.asarray(state, dtype=np.float32)), None

    def predict_states(self, X: np.ndarray, states) -> tuple[np.ndarray, None]:
        """``(P (k, m), None)``: the reference vectors scored in one call."""
        return np.atleast_2d(self.predict_proba(X, np.stack([np.asarray(s, np.float32) for s in states]))), None

    def describe_answered(self, evidence: Evidence) -> np.ndarray:
        """The reference vector (n_ref,) holding the answers of ``evidence`` where its items are reference
        prompts and NaN (not evaluated) elsewhere; items off the reference set raise :class:`NoPosteriorError`."""
        check_is_fitted(self, "classifier_", msg="GenericAssessor is not fitted")
        r = np.full(len(self.reference_features_), np.nan)
        r[self._reference_slots(self.check_evidence(evidence).X)] = evidence.y
        return r

    def held_out_predictions(self, evidence: Evidence) -> np.ndarray:
        """P(success) (n_answered,) of each answered item from the reference vector without its own
        answer, all in one call."""
        X, y = evidence.answered()
        slots = self._reference_slots(X)
        R = np.tile(self.describe_answered(Evidence(X, y)), (len(slots), 1))
        R[np.arange(len(slots)), slots] = np.nan
        return np.diagonal(self.predict_proba(X, R)).astype(np.float64)

    def _reference_slots(self, X: np.ndarray) -> np.ndarray:
        """Reference-set position (n,) of each item with features ``X`` (n, d)."""
        try:
            return reference_positions(self.reference_features_, X, type(self).__name__)
        except MissingReferenceError:
            self.require_posterior("evidence on prompts outside the reference set")  # raises

    # ----------------------------------------------------------------- row parts
    def fill_reference(self, R: np.ndarray) -> np.ndarray:
        """Reference vectors ``R`` (k, n_ref) as the classifier reads them: float32, a NaN cell filled
        with the training LLMs' mean on that reference prompt."""
        check_is_fitted(self, "classifier_", msg="GenericAssessor is not fitted")
        return self._fill(R)

    def pair_rows(self, X: np.ndarray, R: np.ndarray) -> PairRows:
        """The classifier's input rows for ``k`` LLMs with reference vectors ``R`` (k, n_ref) on prompts
        ``X`` (m, d), LLM-major (row ``l * m + i``) and built on demand: ``.inst`` (m, f) is the item part,
        ``.ref`` (k, n_ref) the filled reference vectors, ``.mode`` how a row joins them (the item part
        depends on the LLM only in ``similarity_interaction``), ``.to_array()`` the rows (k * m, width)."""
        check_is_fitted(self, "classifier_", msg="GenericAssessor is not fitted")
        return self._rows(np.asarray(X, dtype=np.float32), R)[0]

    def _predict_rows(self, X: np.ndarray, R: np.ndarray) -> np.ndarray:
        rows, _ = self._rows(X, R)
        src = rows if _streams(self.classifier_) else rows.to_array()
        return self.classifier_.predict_proba(src)[:, 1].reshape(R.shape[0], X.shape[0]).astype(np.float32)


def _bin_sample(rows: PairRows) -> tuple[np.ndarray, np.ndarray]:
    """Rows (n_prompts + n_llms, width) and weights whose per-column weighted value distribution is that of
    ``rows`` (``embedding`` or ``similarity`` mode, where a row is [prompt part, reference part]): each prompt's
    part weighted by its pairs, each LLM's reference vector by its pairs, NaN (missing) in the other part.
    What a :class:`~assessors.classifiers.binned_xgb.BinnedXGBClassifier` cuts its bins on."""
    f = rows.inst.shape[1]
    n_inst, n_llm = np.bincount(rows.inst_idx, minlength=len(rows.inst)), np.bincount(rows.llm_idx, minlength=len(rows.ref))
    inst, llm = np.flatnonzero(n_inst), np.flatnonzero(n_llm)
    sample = np.full((len(inst) + len(llm), rows.width), np.nan, dtype=np.float32)
    sample[:len(inst), :f] = rows.inst[inst]
    sample[len(inst):, f:] = rows.ref[llm]
    return sample, np.concatenate([n_inst[inst], n_llm[llm]]).astype(np.float32)


def _no_row_subsampling(est):
    """``est`` with ``subsample=1`` where it subsamples rows (XGBoost, gradient boosting).

    On collapsed rows, subsampling would drop whole instances with all their LLMs' labels
    instead of some (LLM, instance) pairs, a different and noisier procedure. Without it, the
    weighted fit is exactly the pairwise fit without subsampling, which on the default run is as
    accurate as the pairwise fit with ``subsample=0.8``.
    """
    sub = est.get_params().get("subsample")
    if sub is None or float(sub) == 1.0:
        return est
    log.info("all-train baseline: subsample=%s -> 1.0 on collapsed rows", sub)
    return clone(est).set_params(subsample=1.0)


def _few_rows_threads(est, n_rows: int):
    """``est`` with one thread (``n_jobs=1``) when ``n_rows`` are too few to share between threads
    (:func:`~assessors.threads.threads_for_rows`); the trees are the same, only their wall time changes."""
    from assessors.threads import threads_for_rows

    n = est.get_params().get("n_jobs")
    fewer = threads_for_rows(n_rows, n)
    return est if fewer == n else clone(est).set_params(n_jobs=fewer)


def _early_stops(est) -> bool:
    """Whether a classifier is configured to stop adding trees on an eval set (XGBoost's
    ``early_stopping_rounds``): it then needs the validation pairs at fit time."""
    return est.get_params().get("early_stopping_rounds") is not None


def _streams(est) -> bool:
    """Whether a classifier consumes lazy row sources (the Lightning MLP does)."""
    return capability(est, "accepts_row_source")


def _is_streaming(candidates) -> bool:
    return all(_streams(est) for _, est in candidates)
