"""Calibrating a new task's items against known abilities: a fitted latent model adapted, not retrained.

A latent model learns item parameters only from answers on the training tasks; on a task it never
saw, the item network's parameters can point the wrong way. A few known LLMs (training LLMs, whose
abilities the model holds) answering a few of the task's prompts fix that, the way item-response
models calibrate new items:

1. The calibration answers join the neighbour profiles (:mod:`assessors.core.item_profiles`): every
   task prompt's profile now also reads the known LLMs' answers on its calibrated look-alikes, and
   the item network gives its parameters ``beta_net(x) = [a(x), b(x)]`` from that.
2. For each calibrated prompt, the correction ``delta = beta - beta_net`` is fitted by MAP with the
   known LLMs' abilities fixed (logistic regression of its answers on ``[theta, -1]``, Newton/Laplace),
   and its likelihood is summarised as a Gaussian pseudo-observation.
3. A Gaussian process over the prompts' features (:mod:`assessors.core.task_correction`: a task-level
   shift, a smooth part and a per-prompt part, their scales chosen per coordinate by marginal
   likelihood) carries the corrections to every prompt of the task: calibrated prompts get their own,
   the rest the task's, shrunk towards 0 when the calibrated prompts disagree or are few.
4. A discrimination's prior mean on the task may be pulled towards its mean over the task's prompts
   (``pool_grid``, the share chosen per coordinate by marginal likelihood with the scales): on a task it
   never saw, the network's prompt-to-prompt differences in discrimination, which reorder the prompts
   differently for each LLM, need not hold; the calibrated prompts' answers say how far they do.
5. Optionally (``cluster_grid``), before step 3, one difficulty offset per k-means cluster of the task's
   prompts (:mod:`assessors.core.task_clusters`; their number, none included, chosen by cross-validation
   on the calibration answers): a task's difficulty often moves by group, which cosine similarity misses.
   The Gaussian process then carries what the clusters leave.
6. What the calibrated prompts leave unknown about the task as a whole (the correction's posterior
   covariance, averaged over the task's prompts) widens the adapted model's accuracy bands.

The adapted model (``model_``) is a copy of the latent model whose item parameters on the task's
prompts are corrected; everything else (new LLMs' posteriors from any answers, predictions, bands)
works on it unchanged.
"""
from __future__ import annotations

import copy

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from assessors.core.posterior import check_answers, laplace_posterior
from assessors.core.task_clusters import ClusteredCorrection, fit_offsets, nearest
from assessors.core.task_correction import NetworkSpace, TaskCorrection, covariance, fit_coordinate
from assessors.data.names import check_unique
from assessors.errors import DataError
from assessors.features.base import unit_rows
from assessors.irt_math import sigmoid
from assessors.core.task_calibration_profiles import TaskProfiles, with_calibration

#: Per-prompt status: its own answers corrected it; only the task's other prompts did (no answers, or
#: fewer than ``min_answers``); nothing did (no prompt of the task has enough answers).
STATUS = ("calibrated", "from_task", "too_few_answers", "prior_only")


class TaskCalibration(BaseEstimator):
    """Adapt a fitted latent assessor's item parameters to a new task from known LLMs' answers.

    Parameters
    ----------
    assessor : LatentAssessor
        The fitted latent model (left unchanged; ``model_`` is an adapted copy).
    min_answers : int
        Answers a prompt needs to be calibrated on its own (fewer: it takes the task's correction).
    scale_grid : tuple of float
        Candidate prior scales of the correction, as multiples of the spread of the network's
        parameters over the reference prompts (one chosen per coordinate by marginal likelihood).
    length_grid : tuple of float
        Candidate length scales of the smooth part over cosine similarity.
    item_share : float
        Per-prompt part's scale relative to the task-level and smooth parts.
    augment_profiles : bool
        Let the calibration answers enter the neighbour profiles (step 1).
    discrimination : bool
        Correct the discriminations too (else only the difficulties: per-prompt discriminations from
        a few dozen known LLMs are noisy, and a wrong direction reorders the prompts for every LLM).
    spaces : tuple of {"prompt", "network"}
        Candidate kernel spaces of the smooth part (one chosen per coordinate by marginal likelihood):
        cosine similarity of the prompts' features, or of the item network's last hidden layer
        (a Bayesian fine-tune of its output layer on the task).
    pool_grid : tuple of float
        Candidate shares of the pull of each discrimination's prior mean towards its mean over the task's
        prompts (0: the network's own; 1: one discrimination for the task), chosen per coordinate by
        marginal likelihood; ``(0.0,)`` keeps the network's, and so does ``discrimination=False``.
    cluster_grid : tuple of int
        Candidate numbers of k-means clusters of the task's prompts with their own difficulty offset,
        chosen by cross-validation on the calibration answers; 1 is none, ``()`` turns the step off.

    Attributes
    ----------
    model_ : LatentAssessor
        The adapted copy.
    correction_ : TaskCorrection
    status_ : ndarray of str, shape (n,)
        One of :data:`STATUS` per task prompt.
    n_answers_ : ndarray of shape (n,)
    task_spread_ : float
        Posterior sd of a known LLM's mean accuracy over the task from the correction's uncertainty;
        added (in quadrature) to the adapted model's ``accuracy_error_sd_``, so its accuracy bands widen.
    chosen_ : list of list of tuple
        Per member and coordinate ``(scale multiple, length, space, pool)`` chosen.
    clusters_ : ClusterOffsets or None
        The cluster offsets (None: none chosen or the step off); ``clusters_.cv`` holds the
        cross-validated log-likelihood per number of clusters.
    """

    def __init__(self, assessor, min_answers: int = 5, scale_grid=(0.25, 0.5, 1.0, 2.0, 4.0),
                 length_grid=(0.05, 0.1, 0.2, 0.5, 1.0), item_share: float = 1.0, augment_profiles: bool = True,
                 discrimination: bool = True, spaces=("prompt",), pool_grid=(0.0, 0.5, 1.0), cluster_grid=()):
        self.assessor = assessor
        self.min_answers = min_answers
        self.scale_grid = scale_grid
        self.length_grid = length_grid
        self.item_share = item_share
        self.augment_profiles = augment_profiles
        self.discrimination = discrimination
        self.spaces = spaces
        self.pool_grid = pool_grid
        self.cluster_grid = cluster_grid

    def fit(self, X: np.ndarray, Y: np.ndarray, llm_rows, theta: np.ndarray | None = None) -> "TaskCalibration":
        """Calibrate the task's prompts ``X`` on the known LLMs' answers ``Y``.

        Parameters
        ----------
        X : ndarray of shape (n, d)
            Features of every prompt of the new task (answered or not).
        Y : ndarray of shape (k, n)
            Answers of ``k`` known LLMs: 0/1, NaN = not asked. Other values raise :class:`DataError`.
        llm_rows : sequence of int, length k
            Each answering LLM's row among the model's training LLMs (the order ``fit`` saw them).
        theta : ndarray of shape (n_members, k, D), optional
            Their abilities (e.g. the served model's ``known_states`` thetas); default their
            training abilities.
        """
        base = self.assessor
        base._check_fitted()
        X, Y, rows = _check_calibration(X, Y, llm_rows, len(base.members_[0]["theta"]))
        if theta is None:
            theta = np.stack([t[rows] for t in base.training_abilities()])
        theta = np.asarray(theta, dtype=np.float64)
        self.n_answers_ = np.isfinite(Y).sum(0)
        enough = self.n_answers_ >= int(self.min_answers)
        training = (base.profiles_.features_ if getattr(base, "profiles_", None) is not None
                    else unit_rows(base.reference_features_).astype(np.float16))
        self.correction_ = TaskCorrection(unit_rows(X[enough]), unit_rows(X).astype(np.float16), training, [])
        model = self._adapted_copy(X, Y, rows, enough)
        prior = model._params(X)  # the network's parameters, with the augmented profiles
        ref = base._params(base.reference_features_)
        spreads = [np.maximum(np.hstack([ra, rb[:, None]]).std(0), 1e-3) for ra, rb in ref]  # (D + 1,) each
        betas = [np.hstack([a, b[:, None]])[enough] for a, b in prior]
        pseudo = [self._pseudo(beta, Y[:, enough], theta[m], spreads[m]) for m, beta in enumerate(betas)
                  ] if enough.any() else []
        self.clusters_ = self._fit_clusters(X, Y, enough, theta, betas, spreads, pseudo) if pseudo else None
        self.correction_.fits = self._fit_members(pseudo, spreads, betas, prior)
        model.item_correction_ = (self.correction_ if self.clusters_ is None
                                  else ClusteredCorrection(self.correction_, self.clusters_))
        # the band of a new LLM's accuracy on the task also carries what the calibrated prompts leave
        # unknown about the task as a whole (a shift shared by its prompts does not average out)
        self.task_spread_ = self._task_spread(model, X, theta) if enough.any() else 0.0
        model.accuracy_error_sd_ = float(np.hypot(getattr(base, "accuracy_error_sd_", 0.0), self.task_spread_))
        model._cache_reference()
        self.model_ = model
        answered = self.n_answers_ > 0
        self.status_ = np.where(enough, "calibrated", np.where(answered, "too_few_answers", "from_task"))
        if not enough.any():
            self.status_[:] = "prior_only"
        return self

    def _adapted_copy(self, X, Y, rows, enough):
        """A copy of the assessor to adapt: its profiles augmented with the calibration answers (when
        ``augment_profiles``), and the correction's network space set up (when ``spaces`` has it)."""
        base = self.assessor
        model = copy.copy(base)
        model.item_correction_ = None
        if self.augment_profiles and getattr(base, "profiles_", None) is not None and enough.any():
            model.profiles_ = TaskProfiles(base.profiles_, with_calibration(base.profiles_, X[enough], Y[:, enough],
                                                                             rows), self.correction_)
        if "network" in self.spaces:
            self.correction_.network = NetworkSpace(model._inputs, [mb["weights"] for mb in base.members_])
            self.correction_.calibrated_network = [self.correction_.network(X[enough], m)
                                                   for m in range(len(base.members_))]
        return model

    def _fit_clusters(self, X, Y, enough, theta, betas, spreads, pseudo):
        """The per-cluster difficulty offsets (None: no clusters chosen, or none offered); when chosen,
        their shift is taken out of the pseudo-observations ``pseudo`` (in place) so that the Gaussian
        process carries only what the clusters leave."""
        if not len(self.cluster_grid):
            return None
        # an offset shifts its cluster's difficulties only: observed with the discriminations held
        alone = [self._pseudo(beta, Y[:, enough], theta[m], spreads[m], True) for m, beta in enumerate(betas)]
        obs_b, noise_b = (np.array([ps[i][:, 0] for ps in alone]) for i in (0, 1))
        clusters = fit_offsets(X, np.flatnonzero(enough), obs_b, noise_b, betas, Y[:, enough], theta,
                               np.array([s[-1] for s in spreads]) ** 2, self.cluster_grid)
        if clusters is not None:
            shift, _ = clusters.moments(X[enough])
            for m, (obs, _) in enumerate(pseudo):
                obs[:, -1] -= shift[m]
        return clusters

    @staticmethod
    def _pseudo(beta, Y, theta, spread, difficulty_only: bool = False):
        """Per calibrated prompt, the correction's Gaussian pseudo-observation: mean and variance (n_cal, D + 1)
        each (n_cal, 1 with ``difficulty_only``: the discriminations held at the network's), from its
        network parameters ``beta`` (n_cal, D + 1), its answers ``Y`` (k, n_cal) and the known
        abilities ``theta`` (k, D)."""
        Z = np.hstack([theta, -np.ones((len(theta), 1))])  # logit = Z @ beta
        logit = beta @ Z.T  # (n_cal, k)
        if difficulty_only:
            Z, spread = Z[:, -1:], spread[-1:]
        wide = np.diag(1.0 / (2.0 * spread) ** 2)
        # the correction of each prompt by MAP under a wide prior; ``b`` of laplace_posterior is the
        # negated network logit of each (prompt, LLM), so its parameter is the correction itself
        delta, cov = laplace_posterior(Z, -logit, Y.T, np.zeros(len(spread)), wide)
        lik = np.linalg.inv(cov) - wide + 1e-6 * np.eye(len(spread))  # the answers' precision alone
        lik_cov = np.linalg.inv(lik)
        obs = np.einsum("nij,njk,nk->ni", lik_cov, np.linalg.inv(cov), delta)  # the likelihood's own mean
        return obs, np.minimum(np.diagonal(lik_cov, axis1=1, axis2=2), 1e4)

    def _fit_members(self, pseudo, spreads, betas, prior) -> list:
        """Every member's coordinate fits (empty lists without pseudo-observations); sets ``chosen_``.
        ``betas``: the calibrated prompts' network parameters; ``prior``: every task prompt's."""
        fits, self.chosen_ = [], []
        for m, spread in enumerate(spreads):
            centre = np.hstack([prior[m][0], prior[m][1][:, None]]).mean(0)  # (D + 1,): over the task's prompts
            coords = self._fit_member(*pseudo[m], spread, m, betas[m] - centre, centre) if pseudo else []
            fits.append(coords)
            self.chosen_.append([(f.scales[0] / s, f.length, f.space, f.pool) for f, s in zip(coords, spread)])
        return fits

    def _fit_member(self, obs, noise, spread, member: int, offset, centre) -> list:
        """One member's coordinate fits from its pseudo-observations ``obs``, ``noise`` (n_cal, D + 1); ``offset``
        (n_cal, D + 1): the calibrated prompts' network parameters minus ``centre`` (D + 1,), their task means."""
        c = self.correction_
        spaces = {sp: c.calibrated if sp == "prompt" else c.calibrated_network[member] for sp in self.spaces}
        coords = []
        for p in range(len(spread)):
            # discriminations only, and only when they are corrected
            pools = self.pool_grid if self.discrimination and p < len(spread) - 1 else (0.0,)
            cands = [fit_coordinate(U, obs[:, p], noise[:, p],
                                    (s * spread[p], s * spread[p], s * spread[p] * float(self.item_share)), length, sp,
                                    r, offset[:, p], centre[p])
                     for sp, U in spaces.items() for s in self._scales(p, len(spread)) for length in self.length_grid
                     for r in pools]
            coords.append(max(cands, key=lambda f: f.log_ml))
        return coords

    def _task_spread(self, model, X, theta, max_prompts: int = 500) -> float:
        """Posterior sd of a known LLM's mean accuracy over the task's prompts ``X`` (n, d) (at most
        ``max_prompts`` of them) from the correction's posterior covariance (root mean square over the
        known LLMs ``theta`` (n_members, k, D) and members), to first order in the correction."""
        c = self.correction_
        Q = X if len(X) <= max_prompts else X[np.random.default_rng(0).choice(len(X), max_prompts, replace=False)]
        var = []
        for m, ((a, b), coords) in enumerate(zip(model._params(Q), c.fits)):
            p = sigmoid(theta[m] @ a.T - b[None, :])
            w = p * (1.0 - p) / len(Q)  # (k, q): d(mean accuracy) / d(logit of each prompt)
            Z = np.hstack([theta[m], -np.ones((len(theta[m]), 1))])  # d(logit) / d(correction coordinate)
            v_m = np.zeros(len(Z))
            for j, f in enumerate(coords):
                Uq, Uc = c.space(Q, m, f.space)
                v = np.linalg.solve(f.chol, covariance(Uq, Uc, f.scales, f.length).T)
                post = covariance(Uq, Uq, f.scales, f.length) - v.T @ v  # (q, q)
                v_m += Z[:, j] ** 2 * np.einsum("kq,qr,kr->k", w, post, w)
            if self.clusters_ is not None:  # a cluster's offset is shared by its prompts: sum, then square
                lab = nearest(Q, self.clusters_.centers)
                per_cluster = w @ np.eye(len(self.clusters_.centers))[lab]  # (k, K)
                v_m += per_cluster ** 2 @ self.clusters_.var[m]
            var.append(np.maximum(v_m, 0.0))
        return float(np.sqrt(np.mean(var)))

    def _scales(self, p: int, n_coords: int) -> tuple:
        """Candidate scale multiples of coordinate ``p``: none but 0 for a discrimination when they stay."""
        return self.scale_grid if self.discrimination or p == n_coords - 1 else (0.0,)

    def item_posterior(self, X: np.ndarray) -> dict[str, np.ndarray]:
        """The adapted item parameters at prompts ``X`` (m, d) and their posterior spread.

        Returns
        -------
        dict with ``a`` (n_members, m, D), ``b`` (n_members, m), ``a_sd`` (n_members, m, D), ``b_sd``
        (n_members, m). Outside the task the spread is 0 (the network's parameters are kept).
        """
        check_is_fitted(self, "model_")
        X = np.asarray(X, dtype=np.float32)
        a, b = self.model_.item_parameters(X)
        if not self.correction_.fits or not self.correction_.fits[0]:
            return {"a": a, "b": b, "a_sd": np.zeros_like(a), "b_sd": np.zeros_like(b)}
        _, var = self.correction_.moments(X)
        if self.clusters_ is not None:  # the offsets' uncertainty adds to the difficulties' spread
            var[..., -1] += np.where(self.correction_.membership(X), self.clusters_.moments(X)[1], 0.0)
        sd = np.sqrt(var)
        return {"a": a, "b": b, "a_sd": sd[..., :-1], "b_sd": sd[..., -1]}

    def report(self) -> dict:
        """Counts of :data:`STATUS` over the task's prompts and the answers used."""
        check_is_fitted(self, "model_")
        return {"prompts": int(len(self.status_)), "answers": int(self.n_answers_.sum()),
                **{s: int((self.status_ == s).sum()) for s in STATUS}}


def _check_calibration(X, Y, llm_rows, n_known: int):
    """The task's prompts ``X`` (n, d) as float32, the answers ``Y`` (k, n) checked (0/1/NaN) and the
    known LLMs' rows (k,); a :class:`DataError` naming the rows for a wrong shape, an unknown or a
    repeated LLM."""
    X = np.asarray(X, dtype=np.float32)
    Y = check_answers(Y, "calibration answers")
    rows = np.asarray(llm_rows, dtype=int).ravel()
    if Y.shape != (len(rows), len(X)):
        raise DataError(f"calibration answers have shape {Y.shape}; expected (len(llm_rows), n prompts) = "
                        f"({len(rows)}, {len(X)})")
    bad = np.flatnonzero((rows < 0) | (rows >= n_known))
    if len(bad):
        raise DataError(f"calibration answers rows {bad.tolist()} name LLMs the model does not know "
                        f"(llm_rows {rows[bad].tolist()}; it knows rows 0..{n_known - 1}); drop them")
    check_unique(rows.tolist(), "calibration answers", "llm_rows value", fix="give one row per LLM")
    return X, Y, rows
