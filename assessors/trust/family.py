"""The one place the trust report meets a model family: evidence -> state -> predictions with a spread.

The trust report, its verdict and its fallbacks are written against what every family gives: a
state described from an LLM's answered items, predictions ``(p, p_std or None)`` on any prompts, draws
of the true success probabilities (the report's bands and misfit check), the training LLMs' expected
accuracy on the target prompts (extrapolation) and a prompt projection (the reference-only fallback).
:func:`family` picks the adapter; an assessor protocol that gives these quantities replaces it.

* :class:`LatentFamily` (``assessor=latent``): the state is the posterior over abilities; draws come
  from abilities drawn from it; the distance is the ability's Mahalanobis distance from the prior.
* :class:`ReferenceFamily` (the paper's generic assessor): the state is the reference vector; no
  spread, so the draws are the prediction itself; answered items are predicted leave-one-out (with
  its own answer in the vector the input would hold the label); no distance.
"""
from __future__ import annotations

import numpy as np

from assessors.irt_math import sigmoid
from assessors.memo import ArrayMemo


def family(model):
    """The adapter of ``model`` (an :class:`AssessorModel`, a fitted assessor, or an adapter already)."""
    if isinstance(model, (LatentFamily, ReferenceFamily)):
        return model
    assessor = getattr(model, "assessor", model)
    if callable(getattr(assessor, "posterior", None)):
        return LatentFamily(assessor)
    return ReferenceFamily(assessor, getattr(model, "reference_success", None))


class LatentFamily:
    """Adapter of a fitted latent assessor (see the module docstring)."""

    name = "latent"

    def __init__(self, assessor):
        self.assessor = assessor

    def describe(self, X_answered, y):
        return self.assessor.posterior(np.asarray(X_answered, dtype=np.float32), np.asarray(y, dtype=np.float64)[None, :])

    def predict(self, X, state) -> tuple[np.ndarray, np.ndarray]:
        p, std = self.assessor.predict_posterior(np.asarray(X, dtype=np.float32), state)
        return p[0], std[0]

    def project(self, X) -> np.ndarray:
        return self.assessor.project(X)

    def statistics(self, X_answered, y, X_target, level: float, n_samples: int, rng, seed: int) -> dict:
        """What the report is computed from (see :func:`~assessors.trust.posterior_report.posterior_trust`)."""
        a = self.assessor
        post = self.describe(X_answered, y)
        acc = a.predictive_accuracy(X_target, post, level=level, seed=seed)
        p, _ = self.predict(X_target, post)
        members = post.theta.shape[0]
        thetas = []
        for m in range(members):  # ability draws, the same number per member
            L = np.linalg.cholesky(post.cov[m, 0])
            thetas.append(post.theta[m, 0] + rng.standard_normal((max(1, n_samples // members), L.shape[0])) @ L.T)
        params_t = list(zip(*a.item_parameters(X_target)))
        res_t = res_a = None
        if post.residual is not None and post.residual.tau.any():  # the LLM's own logit shift per prompt
            res_t = post.residual.w[0] @ a.project(X_target).T
            res_a = post.residual.w[0] @ a.project(X_answered).T if len(X_answered) else None
        obs = np.isfinite(y)
        P_answered = None
        if obs.any():
            params_a = list(zip(*a.item_parameters(X_answered[obs])))
            P_answered = sigmoid(_logits(params_a, thetas, None if res_a is None else res_a[obs]))
        train_acc, maha, maha_max = [], [], []
        for m, (th_tr, prior, (a_t, b_t)) in enumerate(zip(a.training_abilities(), a.ability_priors(), params_t)):
            train_acc.append(sigmoid(th_tr @ a_t.T - b_t).mean(1))
            d = th_tr - prior.mean
            maha_max.append(float(np.sqrt(np.einsum("nd,de,ne->n", d, prior.precision, d)).max()))
            dn = post.theta[m, 0] - prior.mean
            maha.append(float(np.sqrt(dn @ prior.precision @ dn)))
        return {"p_target": p, "expected_accuracy": float(acc["mean"][0]),
                "accuracy_band": (float(acc["low"][0]), float(acc["high"][0])),
                "P_target": sigmoid(_logits(params_t, thetas, res_t)), "P_answered": P_answered,
                "training_accuracy": np.mean(train_acc, 0), "distance": float(np.mean(maha)),
                "distance_max": float(np.mean(maha_max))}


def _logits(params, thetas, res=None) -> np.ndarray:
    """Logits (n_draws_total, n_items) of every member's ability draws."""
    z = np.concatenate([th @ a.T - b for th, (a, b) in zip(thetas, params)])
    return z if res is None else z + res[None, :]


class ReferenceFamily:
    """Adapter of the paper's generic assessor, which conditions on a reference vector (module docstring).

    Parameters
    ----------
    assessor : GenericAssessor
        Fitted; ``reference_features_`` (n_ref, d) are the reference prompts.
    training_reference : ndarray of shape (n_train_llms, n_ref), optional
        The training LLMs' reference results (``AssessorModel.reference_success``): their expected
        accuracy on the target prompts is the range a new LLM is compared with (no range without it).
    """

    name = "generic"

    def __init__(self, assessor, training_reference=None):
        self.assessor = assessor
        self.training_reference = training_reference
        self._train_acc = ArrayMemo(4)  # the same target prompts come back for every LLM a server registers

    def _index(self, X_answered) -> np.ndarray:
        """Reference-set position of each row of ``X_answered`` (n,)."""
        X_ref = np.asarray(self.assessor.reference_features_, dtype=np.float32)
        where = {row.tobytes(): i for i, row in enumerate(X_ref)}
        idx = [where.get(row.tobytes()) for row in np.asarray(X_answered, dtype=np.float32)]
        if any(i is None for i in idx):
            self.assessor.require_posterior("evidence on prompts outside the reference set")  # raises
        return np.asarray(idx, dtype=int)

    def describe(self, X_answered, y) -> np.ndarray:
        """The reference vector (n_ref,) holding ``y`` where ``X_answered`` rows are reference prompts."""
        r = np.full(len(self.assessor.reference_features_), np.nan)
        r[self._index(X_answered)] = np.asarray(y, dtype=np.float64)
        return r

    def predict(self, X, state) -> tuple[np.ndarray, None]:
        return np.asarray(self.assessor.predict_proba(np.asarray(X, dtype=np.float32), state), dtype=np.float64), None

    def project(self, X) -> np.ndarray:
        return np.asarray(X, dtype=np.float32)

    def statistics(self, X_answered, y, X_target, level: float, n_samples: int, rng, seed: int) -> dict:
        X_answered = np.asarray(X_answered, dtype=np.float32)
        obs = np.isfinite(y)
        idx = self._index(X_answered[obs])
        r = np.full(len(self.assessor.reference_features_), np.nan)
        r[idx] = y[obs]
        p, _ = self.predict(X_target, r)
        tail = (1 - level) / 2
        acc = (np.random.default_rng(seed).random((n_samples, len(p))) < p).mean(1)
        P_answered = None
        if obs.any():
            R = np.tile(r, (len(idx), 1))
            R[np.arange(len(idx)), idx] = np.nan  # leave-one-out: each answered item without its own answer
            loo = np.diagonal(self.assessor.predict_proba(X_answered[obs], R)).astype(np.float64)
            P_answered = np.broadcast_to(loo, (n_samples, len(loo)))
        T = self.training_reference
        train_acc = (np.array([np.nan]) if T is None else self._train_acc.get(
            np.asarray(X_target, dtype=np.float32), lambda X: self.assessor.predict_proba(X, np.asarray(T)).mean(1)))
        return {"p_target": p, "expected_accuracy": float(p.mean()),
                "accuracy_band": (float(np.quantile(acc, tail)), float(np.quantile(acc, 1 - tail))),
                "P_target": np.broadcast_to(p, (n_samples, len(p))), "P_answered": P_answered, "training_accuracy": train_acc,
                "distance": float("nan"), "distance_max": float("nan")}
