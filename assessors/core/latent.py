"""The latent-ability assessor: abilities for LLMs, item parameters from prompts.

``P(LLM m succeeds on prompt x) = sigmoid(theta_m . a(x) - b(x))``: a multidimensional
two-parameter IRT model whose discrimination ``a(x)`` (D) and difficulty ``b(x)`` come from the
prompt's features through a small network, so it scores prompts never seen in training. A new LLM
is a Gaussian posterior over ``theta`` given *any* graded items it answered (the reference set, part
of it, or other prompts), under a prior fitted on the training LLMs' abilities; predictions carry
the posterior-predictive spread. A per-LLM residual over prompt features (see
:mod:`assessors.core.residual`) lets the LLM's own answers rank prompts where the population's item
parameters cannot. A small ensemble of independently seeded networks averages out the
seed-to-seed variance of one network.

It implements the assessor protocol (:class:`~assessors.core.protocol.Assessor`; an LLM's state is its
posterior, one row of :class:`LatentPosterior`) and the generic assessor's ``predict_proba(X, R)``, so
it drops in wherever that one is used.
"""
from __future__ import annotations

import contextlib
import logging

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from assessors.core.item_profiles import NeighbourProfiles
from assessors.core.latent_calibration import IDENTITY, accuracy_band, excess_accuracy_error, fit_platt
from assessors.core.latent_net import item_parameters, train_member
from assessors.core.latent_validation import HeldOutScores, ValidationLLMScores
from assessors.core.latent_predictive import (LatentPosterior, ability_posterior, latent_predictive,
                                               posterior_predictive)
from assessors.core.posterior import GaussianPrior, check_answers, sigmoid
from assessors.core.protocol import Assessor, TrustStatistics
from assessors.core.residual import FeatureProjection, fit_residual
from assessors.errors import DataError
from assessors.irt_math import logit
from assessors.memo import ArrayMemo

log = logging.getLogger(__name__)


class LatentAssessor(Assessor, BaseEstimator):
    """Latent-ability (IRT) assessor with item parameters from prompt features.

    Parameters
    ----------
    dims : int
        Ability dimension D.
    hidden_sizes : tuple of int
        Hidden layers of the item network.
    dropout, lr, weight_decay : float
        Item-network dropout; AdamW learning rate and weight decay.
    prior_var : float
        Training prior variance of abilities (MAP penalty).
    n_members : int
        Independently seeded networks averaged at prediction.
    batch_prompts : int
        Prompts per training batch (with all their graded pairs).
    max_epochs, patience : int
        Epoch cap and early-stopping patience.
    monitor : {"loss", "auc"}
        Early-stopping criterion on validation LLMs x validation prompts: log loss, or mean
        per-LLM AUC. Validation LLMs enter through their posterior given their reference answers,
        exactly as new LLMs do at prediction.
    validation_fraction : float
        Without validation data: fraction of training prompts held out for early stopping.
    residual : bool
        Fit the per-LLM residual (chosen by evidence, so it stays off unless the answers support it).
    residual_dims : int
        Whitened PCA components of the prompt features the residual uses.
    residual_taus : tuple of float
        Candidate prior scales of the residual weights (0 is always a candidate).
    residual_min_gain : float
        Log Bayes factor the residual needs over none to be switched on for an LLM.
    item_neighbours : int
        The item network also takes each training LLM's mean answer over the prompt's
        ``item_neighbours`` nearest training prompts (:mod:`assessors.core.item_profiles`); 0: the
        prompt features alone.
    seed : int
    num_threads : int, optional
        Torch threads while training and BLAS threads while fitting and predicting (None: the
        libraries' settings). One by default: the steps are tiny and latency-bound, and two threads
        spinning against each other made training several times slower on 2 busy cores (and the
        fit's PCA of the residual 10x the CPU time).
    progress : bool
        Log each epoch's validation score (the streaming fit: Lightning's progress bar).

    Attributes
    ----------
    members_ : list of dict
        Per member: item-network weights (numpy), training abilities, epochs.
    priors_ : list of GaussianPrior
        Ability prior per member, fitted on its training LLMs' abilities.
    profiles_ : NeighbourProfiles or None
        The training prompts and answers the neighbour profiles come from (None when off).
    reference_features_ : ndarray of shape (n_ref, d)
    classifier_name_ : str
        Short description (what run reports show for the generic assessor's selected classifier).
    """

    family_name = "latent"
    #: Prompt sets whose item parameters are kept (a trust report's target prompts and the LLM's answered items).
    PARAMS_MEMO_SIZE = 4

    def __init__(self, dims: int = 4, hidden_sizes=(128,), dropout: float = 0.1, lr: float = 3e-3,
                 weight_decay: float = 1e-3, prior_var: float = 1.0, n_members: int = 3, batch_prompts: int = 64,
                 max_epochs: int = 60, patience: int = 5, monitor: str = "loss", validation_fraction: float = 0.1,
                 residual: bool = True, residual_dims: int = 32, residual_taus=(0.05, 0.1, 0.2, 0.4),
                 residual_min_gain: float = 1.0, item_neighbours: int = 5, seed: int = 0,
                 num_threads: int | None = 1, progress: bool = False):
        self.dims = dims
        self.hidden_sizes = hidden_sizes
        self.dropout = dropout
        self.lr = lr
        self.weight_decay = weight_decay
        self.prior_var = prior_var
        self.n_members = n_members
        self.batch_prompts = batch_prompts
        self.max_epochs = max_epochs
        self.patience = patience
        self.monitor = monitor
        self.validation_fraction = validation_fraction
        self.residual = residual
        self.residual_dims = residual_dims
        self.residual_taus = residual_taus
        self.residual_min_gain = residual_min_gain
        self.item_neighbours = item_neighbours
        self.seed = seed
        self.num_threads = num_threads
        self.progress = progress

    # ---------------------------------------------------------------------- fit
    def fit(self, X: np.ndarray, S: np.ndarray, ref_index: np.ndarray, validation=None) -> "LatentAssessor":
        """Fit on training LLMs x training prompts.

        Parameters
        ----------
        X : ndarray of shape (n, d)
            Features of the training prompts (the reference prompts among them).
        S : ndarray of shape (n_llms, n)
            Training LLMs' success, 0/1 with NaN = not evaluated.
        ref_index : ndarray of shape (n_ref,)
            Positions of the reference prompts in ``X``. Their answers are ordinary training
            pairs here (no input contains another answer, so nothing leaks); they are cached as
            the default evidence for :meth:`predict_proba`.
        validation : tuple (X_val (m, d), S_val (k, m), R_val (k, n_ref)), optional
            Validation prompts, validation LLMs' success on them and their reference answers:
            early stopping watches these LLMs' predictions from their reference posterior.
        """
        if self.monitor not in ("loss", "auc"):
            raise DataError(f"monitor must be 'loss' or 'auc', got {self.monitor!r}")
        with self._threads():  # the fit's numpy work (profiles, early-stopping scores, PCA): small matrices
            return self._fit(X, S, ref_index, validation)

    def _fit(self, X, S, ref_index, validation) -> "LatentAssessor":
        X = np.asarray(X, dtype=np.float32)
        S = check_answers(S, "training success").astype(np.float32)
        ref_index = np.asarray(ref_index, dtype=int)
        if S.shape[1] != len(X):
            raise DataError(f"S has {S.shape[1]} prompts (columns) but X has {len(X)} rows")
        li, ii = np.nonzero(np.isfinite(S))
        y = S[li, ii]
        if len(np.unique(y)) < 2:
            raise DataError(f"latent assessor: training labels are all {y[0] if len(y) else 'missing'}; nothing to learn")
        self.reference_features_ = X[ref_index]
        self.profiles_ = None
        if int(self.item_neighbours) > 0:
            self.profiles_ = NeighbourProfiles(int(self.item_neighbours)).fit(X, S.T, seed=int(self.seed))
        inputs = self._inputs(X)  # the item network's input: features and neighbour profiles
        # S.T: the prompt-major view the held-out scorer reads a block of prompts at a time
        val_fn, train_prompts = self._early_stopping(inputs, S.T, validation)
        keep = np.isin(ii, train_prompts)
        li, ii, y = li[keep], ii[keep], y[keep]
        log.info("latent assessor: %d LLMs x %d prompts, %d training pairs, %d member(s)",
                 S.shape[0], len(train_prompts), len(y), self.n_members)
        self._fit_members(lambda seed: train_member(
            inputs, li, ii, y, S.shape[0], train_prompts=train_prompts, seed=seed, validate=val_fn,
            monitor=self._monitor_name(), **self._training_kwargs()))
        return self._finish(X, validation, "latent")

    def _training_kwargs(self) -> dict:
        """The training hyperparameters every member gets, in-memory or streamed."""
        return dict(dims=int(self.dims), hidden_sizes=tuple(int(h) for h in self.hidden_sizes),
                    dropout=float(self.dropout), lr=float(self.lr), weight_decay=float(self.weight_decay),
                    prior_var=float(self.prior_var), batch_prompts=int(self.batch_prompts),
                    max_epochs=int(self.max_epochs), patience=int(self.patience), num_threads=self.num_threads,
                    progress=bool(self.progress))

    def _monitor_name(self) -> str:
        return "val_loss" if self.monitor == "loss" else "val_neg_auc"

    def _fit_members(self, train_one) -> None:
        """``members_`` and ``priors_`` from ``train_one(seed) -> member dict``, one call per member."""
        self.members_, self.priors_ = [], []
        for m in range(int(self.n_members)):
            member = train_one(int(self.seed) + 1000 * m)
            log.info("latent member %d: best epoch %d of %d (%s %.4f)", m, member["best_epoch"],
                     member["epochs"], self._monitor_name(), member["best"])
            self.members_.append(member)
            self.priors_.append(GaussianPrior.fit(member["theta"]))

    def _finish(self, X, validation, name: str) -> "LatentAssessor":
        """The fitted state after the members: residual projection, reference cache, recalibration."""
        self.projection_ = FeatureProjection(X, int(self.residual_dims), seed=int(self.seed))
        self._cache_reference()
        self.calibration_, self.accuracy_error_sd_ = IDENTITY, 0.0
        if validation is not None and len(validation[1]):
            self._calibrate(*validation)
        self.classifier_name_ = f"{name}(D={self.dims}, {self.n_members} members)"
        self.selection_ = None
        return self

    def _early_stopping(self, X, answers, validation):
        """The per-epoch scorer and the training prompts.

        With validation LLMs: their scores from their reference posterior, training on every prompt.
        Without: ``validation_fraction`` of the prompts held out, scored on the training LLMs'
        ``answers`` (prompt-major: an array or the path of uint8 answers), training on the rest.
        """
        if validation is not None and len(validation[1]):
            X_val, S_val, R_val = validation
            return (ValidationLLMScores(self._inputs(X_val), S_val, self._inputs(self.reference_features_), R_val,
                                        auc=self.monitor == "auc"), np.arange(len(X)))
        n_val = int(round(len(X) * float(self.validation_fraction)))
        if n_val == 0:
            raise DataError("latent assessor: no validation data and validation_fraction=0; "
                            "early stopping needs one of them")
        perm = np.random.default_rng(self.seed).permutation(len(X))
        held, train_prompts = np.sort(perm[:n_val]), np.sort(perm[n_val:])
        return HeldOutScores(answers, X, held, auc=self.monitor == "auc"), train_prompts

    def _calibrate(self, X_val, S_val, R_val):
        """Recalibrate on validation LLMs x validation prompts (never test data): ``calibration_``
        (:func:`~assessors.core.latent_calibration.fit_platt`) first, then ``accuracy_error_sd_``
        from the recalibrated band (:func:`~assessors.core.latent_calibration.excess_accuracy_error`)."""
        S_val = check_answers(S_val, "validation success")
        post = self.reference_posterior(R_val)
        p, _ = self.predict_posterior(X_val, post)
        self.calibration_ = fit_platt(p, S_val)
        error_sd = excess_accuracy_error(self.predictive_accuracy(X_val, post, error_sd=0.0), S_val)
        if error_sd is not None:
            self.accuracy_error_sd_ = error_sd

    def _cache_reference(self):
        self._params_memo = None  # after fitting or adapting: parameters of the state before are stale
        self._ref = self._params(self.reference_features_)
        self._ref_phi = self.projection_(self.reference_features_)

    def _check_fitted(self):
        check_is_fitted(self, "members_", msg="LatentAssessor is not fitted; call fit(X, S, ref_index) first")
        if getattr(self, "_ref", None) is None:  # after unpickling
            self._cache_reference()

    def _inputs(self, X) -> np.ndarray:
        """The item network's input for prompt features ``X`` (m, d): the features, and their neighbour
        profiles when on, shape (m, d + n_llms or its PCA)."""
        profiles = getattr(self, "profiles_", None)  # absent on models pickled before it existed
        return np.asarray(X, dtype=np.float32) if profiles is None else profiles.inputs(X)

    def _params(self, X) -> list[tuple[np.ndarray, np.ndarray]]:
        """Each member's item parameters ``(a (m, D), b (m,))`` of prompts ``X`` (m, d), read-only.

        Memoised on ``X``'s content (:class:`~assessors.memo.ArrayMemo`): serving many LLMs asks for the
        same prompts' parameters several times per LLM, and a task-calibrated model's correction (its
        Gaussian process at every prompt) costs far more than the network. The memo belongs to the state
        that filled it (members, profiles, correction): a copy given another of them starts a new one.
        """
        state = (self.members_, getattr(self, "profiles_", None), getattr(self, "item_correction_", None))
        memo = self.__dict__.get("_params_memo")
        if memo is None or any(old is not new for old, new in zip(memo[0], state)):
            memo = self._params_memo = (state, ArrayMemo(self.PARAMS_MEMO_SIZE))
        return memo[1].get(np.asarray(X, dtype=np.float32), self._computed_params)

    def _computed_params(self, X) -> list[tuple[np.ndarray, np.ndarray]]:
        inputs = self._inputs(X)
        params = [item_parameters(m["weights"], inputs) for m in self.members_]
        # a model adapted to a new task (assessors.task_calibration.calibration) corrects that task's prompts
        correction = getattr(self, "item_correction_", None)
        params = params if correction is None else correction(X, params)
        for a, b in params:  # later callers share them
            a.setflags(write=False)
            b.setflags(write=False)
        return params

    # ------------------------------------------------------------- rich API
    def item_parameters(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Item parameters of prompts with features ``X`` (m, d).

        Returns
        -------
        a : ndarray of shape (n_members, m, D)
            Discriminations (each member has its own ability coordinates).
        b : ndarray of shape (n_members, m)
            Difficulties.
        """
        self._check_fitted()
        params = self._params(X)
        return np.stack([a for a, _ in params]), np.stack([b for _, b in params])

    def _threads(self):
        """BLAS threads for the numpy work of one call: the matrices are small, and on a busy
        2-core machine one thread scored 2x more pairs per second than two."""
        from threadpoolctl import threadpool_limits

        return threadpool_limits(self.num_threads) if self.num_threads else contextlib.nullcontext()

    def posterior(self, X: np.ndarray, Y: np.ndarray) -> LatentPosterior:
        """Posterior over abilities of ``k`` LLMs from any graded items; no retraining.

        Parameters
        ----------
        X : ndarray of shape (n, d)
            Features of the graded items (any prompts the featurizer can embed).
        Y : ndarray of shape (k, n) or (n,)
            0/1 answers, NaN where an LLM did not answer. Other values raise :class:`DataError`.
        """
        self._check_fitted()
        X = np.asarray(X, dtype=np.float32)
        Y = check_answers(Y)
        if Y.shape[1] != len(X):
            raise DataError(f"answers have {Y.shape[1]} columns but {len(X)} items were given")
        with self._threads():
            return self._posterior(self._params(X) if len(X) else None, self.projection_(X) if len(X) else None, Y)

    def evidence_posterior(self, evidence) -> LatentPosterior:
        """Posterior of one LLM (``k = 1``) from its :class:`~assessors.core.evidence.Evidence`:
        :meth:`posterior` on ``evidence.X`` (n, d) and ``evidence.y`` (n,)."""
        return self.posterior(evidence.X, evidence.y[None, :])

    # ----------------------------------------------------------------- protocol
    def describe(self, evidence) -> LatentPosterior:
        """The state of one LLM: its posterior from any graded items (:meth:`evidence_posterior`)."""
        self._check_fitted()
        return self.evidence_posterior(self.check_evidence(evidence))

    def describe_known(self, X: np.ndarray, S: np.ndarray, ref_index=None) -> list[LatentPosterior]:
        """One posterior per LLM from all its answers ``S`` (k, n) on prompts ``X`` (n, d), in one call
        (``ref_index`` is not needed: every answer counts)."""
        post = self.posterior(X, S)
        return [post.take([i]) for i in range(len(post))]

    def describe_reference(self, R: np.ndarray) -> list[LatentPosterior]:
        """One posterior per LLM from its reference answers ``R`` (k, n_ref)."""
        post = self.reference_posterior(np.atleast_2d(R))
        return [post.take([i]) for i in range(len(post))]

    def predict_state(self, X: np.ndarray, state: LatentPosterior) -> tuple[np.ndarray, np.ndarray]:
        """``(p, std)`` of shape (m,): the posterior predictive of one LLM (:meth:`predict_posterior`)."""
        p, std = self.predict_posterior(X, state)
        return p[0], std[0]

    def predict_states(self, X: np.ndarray, states) -> tuple[np.ndarray, np.ndarray]:
        """``(P, STD)`` of shape (k, m): the prompts' item parameters once, the posteriors in one call."""
        return self.predict_parts(self.prompt_parts(X), LatentPosterior.concat(list(states)))

    def require_posterior(self, what: str) -> None:
        """Nothing: this family has a posterior over abilities."""

    def _posterior(self, params, phi, Y) -> LatentPosterior:
        post = ability_posterior(self.priors_, params, Y)
        if self.residual and params is not None and (post.evidence == "ok").any():
            p, _ = latent_predictive(post, params)
            offset = logit(p)
            post.residual = fit_residual(phi, Y, offset, taus=tuple(self.residual_taus),
                                         allowed=post.evidence == "ok", min_gain=float(self.residual_min_gain))
        return post

    def predict_posterior(self, X: np.ndarray, post: LatentPosterior, block: int = 16384):
        """Posterior-predictive P(success) and its spread for every LLM of ``post`` on prompts ``X``.

        Returns
        -------
        p : ndarray of shape (k, m)
            Posterior-predictive mean.
        std : ndarray of shape (k, m)
            Its spread from ability (and residual) uncertainty, mixed over ensemble members.
        """
        self._check_fitted()
        with self._threads():
            return self._predict_posterior(np.asarray(X, dtype=np.float32), post, block)

    def _predict_posterior(self, X, post, block):
        k = len(post)
        P, STD = np.empty((k, len(X)), np.float32), np.empty((k, len(X)), np.float32)
        for s in range(0, len(X), block):
            sl = slice(s, min(s + block, len(X)))
            P[:, sl], STD[:, sl] = self._predict_block(post, self._params(X[sl]), lambda: self.projection_(X[sl]))
        return P, STD

    def _predict_block(self, post, params, phi):
        """Posterior predictive from item parameters and the residual projection (``phi``: array or thunk)."""
        return posterior_predictive(post, params, phi, getattr(self, "calibration_", IDENTITY))

    def prompt_parts(self, X: np.ndarray) -> tuple:
        """What :meth:`predict_posterior` computes from the prompt features (item parameters, residual
        projection), for callers that predict the same prompts under many posteriors
        (:meth:`predict_parts`)."""
        self._check_fitted()
        X = np.asarray(X, dtype=np.float32)
        with self._threads():
            return self._params(X), self.projection_(X)

    def predict_parts(self, parts: tuple, post: LatentPosterior) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`predict_posterior` on prompts given by their :meth:`prompt_parts`; same shapes."""
        with self._threads():
            p, std = self._predict_block(post, *parts)
        return np.asarray(p, np.float32), np.asarray(std, np.float32)

    def _reference_posterior(self, R) -> tuple[LatentPosterior, bool]:
        self._check_fitted()
        R = np.asarray(R, dtype=np.float64)
        single = R.ndim == 1
        R = check_answers(R[None, :] if single else R, "reference answers")
        n_ref = len(self.reference_features_)
        if R.shape[1] != n_ref:
            raise DataError(f"reference results must have shape (n_llms, {n_ref}), got {R.shape}")
        with self._threads():
            return self._posterior(self._ref, self._ref_phi, R), single

    def reference_posterior(self, R: np.ndarray) -> LatentPosterior:
        """Posterior over the abilities of ``k`` LLMs from their reference answers ``R`` (k, n_ref)
        (0/1, NaN = not answered); a single vector (n_ref,) counts as ``k = 1``."""
        return self._reference_posterior(R)[0]

    def project(self, X: np.ndarray) -> np.ndarray:
        """The whitened low-dimensional projection of prompt features ``X`` (m, d) that the
        residual works on: shape (m, n_components), ``n_components <= residual_dims``."""
        self._check_fitted()
        return self.projection_(np.asarray(X, dtype=np.float32))

    def training_abilities(self) -> list[np.ndarray]:
        """MAP abilities of the training LLMs, one array (n_train_llms, D) per ensemble member."""
        self._check_fitted()
        return [np.asarray(m["theta"], dtype=np.float64) for m in self.members_]

    def ability_priors(self) -> list[GaussianPrior]:
        """The ability prior of each ensemble member, fitted on its training LLMs' abilities."""
        self._check_fitted()
        return list(self.priors_)

    def trust_statistics(self, evidence, X_target: np.ndarray, *, level: float = 0.9, n_samples: int = 300,
                         rng=None, seed: int = 0) -> TrustStatistics:
        """What the trust report is computed from (:class:`~assessors.core.protocol.TrustStatistics`): the
        posterior predictive and accuracy band on ``X_target`` (m, d); true success probabilities from
        ``n_samples`` ability draws of ``rng`` (the same number per member; the LLM's residual at its mean);
        the Mahalanobis distance of the MAP ability from the prior, and the largest training LLM's."""
        rng = np.random.default_rng(seed) if rng is None else rng
        X_answered, y = evidence.X, evidence.y
        X_target = np.asarray(X_target, dtype=np.float32)
        post = self.describe_answered(evidence)
        acc = self.predictive_accuracy(X_target, post, level=level, seed=seed)
        p, _ = self.predict_state(X_target, post)
        members = post.theta.shape[0]
        thetas = []
        for m in range(members):
            L = np.linalg.cholesky(post.cov[m, 0])
            thetas.append(post.theta[m, 0] + rng.standard_normal((max(1, n_samples // members), L.shape[0])) @ L.T)
        res_t = res_a = None
        if post.residual is not None and post.residual.tau.any():  # the LLM's own logit shift per prompt
            res_t = post.residual.w[0] @ self.project(X_target).T
            res_a = post.residual.w[0] @ self.project(X_answered).T if len(X_answered) else None
        obs = np.isfinite(y)
        P_answered = None
        if obs.any():
            P_answered = _drawn(self.item_parameters(X_answered[obs]), thetas, None if res_a is None else res_a[obs])
        maha, maha_max = [], []
        for m, (th_tr, prior) in enumerate(zip(self.training_abilities(), self.ability_priors())):
            d = th_tr - prior.mean
            maha_max.append(float(np.sqrt(np.einsum("nd,de,ne->n", d, prior.precision, d)).max()))
            dn = post.theta[m, 0] - prior.mean
            maha.append(float(np.sqrt(dn @ prior.precision @ dn)))
        return TrustStatistics(p, float(acc["mean"][0]), (float(acc["low"][0]), float(acc["high"][0])),
                               _drawn(self.item_parameters(X_target), thetas, res_t), P_answered,
                               float(np.mean(maha)), float(np.mean(maha_max)))

    def population_accuracy(self, X_target: np.ndarray, training_reference=None) -> np.ndarray:
        """The training LLMs' expected accuracy (n_train_llms,) on ``X_target`` (m, d) at their MAP abilities,
        averaged over members (``training_reference`` is not needed)."""
        a, b = self.item_parameters(np.asarray(X_target, dtype=np.float32))
        return np.mean([sigmoid(th @ a_m.T - b_m).mean(1) for th, a_m, b_m in zip(self.training_abilities(), a, b)], 0)

    def check_reference(self, r) -> None:
        """Raise :class:`DataError` unless ``r`` (n_ref,) holds 0/1/NaN answers on the reference set."""
        r = np.asarray(r, dtype=np.float64)
        if r.shape != (len(self.reference_features_),):
            raise DataError(f"reference results must have {len(self.reference_features_)} values, got shape {r.shape}")
        check_answers(r, "reference answers")

    def predict_distribution(self, X: np.ndarray, R: np.ndarray):
        """``(p, std, evidence)`` from reference answers ``R`` (k, n_ref): see :meth:`predict_posterior`."""
        post, single = self._reference_posterior(R)
        p, std = self.predict_posterior(X, post)
        return (p[0], std[0], post.evidence[0]) if single else (p, std, post.evidence)

    def predict_proba(self, X: np.ndarray, R: np.ndarray) -> np.ndarray:
        """P(success) for each LLM and prompt, as :meth:`GenericAssessor.predict_proba`: shape
        (k, m), not scikit-learn's (n, 2).

        Parameters
        ----------
        X : ndarray of shape (m, d)
        R : ndarray of shape (k, n_ref) or (n_ref,)
            Reference answers (0/1, NaN = not answered).

        Returns
        -------
        ndarray of shape (k, m) (or (m,) for a single vector)
        """
        return self.predict_distribution(X, R)[0]

    def predictive_accuracy(self, X: np.ndarray, post: LatentPosterior, level: float = 0.9, n_samples: int = 400,
                            seed: int = 0, error_sd: float | None = None) -> dict[str, np.ndarray]:
        """Posterior-predictive band of each LLM's realised accuracy on prompts ``X``.

        Abilities are sampled from each member's posterior (the same number per member), item
        outcomes from the resulting probabilities, plus the item model's own accuracy error
        (``error_sd``, default ``accuracy_error_sd_`` estimated on validation LLMs); the band is
        the central ``level`` interval of the sampled accuracies.

        Returns
        -------
        dict with ``mean``, ``low``, ``high``, ``sd``: ndarrays of shape (k,)
        """
        self._check_fitted()
        params = self._params(np.asarray(X, dtype=np.float32))
        res = None
        if post.residual is not None and post.residual.tau.any():
            res = post.residual.w @ self.projection_(X).T  # (k, m), the residual at its posterior mean
        err = getattr(self, "accuracy_error_sd_", 0.0) if error_sd is None else error_sd
        return accuracy_band(params, post, res, calibration=getattr(self, "calibration_", IDENTITY), error_sd=err,
                             level=level, n_samples=n_samples, seed=seed)

    def sample_answers(self, X: np.ndarray, n_llms: int, seed: int = 0, member: int = 0):
        """Simulated LLMs: abilities from the fitted prior, answers sampled on prompts ``X``.

        Returns
        -------
        theta : ndarray of shape (n_llms, D)
        Y : ndarray of shape (n_llms, m), float32 0/1
        """
        self._check_fitted()
        rng = np.random.default_rng(seed)
        a, b = self._params(np.asarray(X, dtype=np.float32))[member]
        th = self.priors_[member].sample(n_llms, rng)
        return th, (rng.random((n_llms, len(a))) < sigmoid(th @ a.T - b)).astype(np.float32)

    def __setstate__(self, state):
        state.setdefault("item_neighbours", 0)  # pickled before the neighbour profiles existed: it has none
        super().__setstate__(state)

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_ref", None)
        state.pop("_ref_phi", None)
        state.pop("_params_memo", None)
        return state


def _drawn(params, thetas, res=None) -> np.ndarray:
    """P(success) (n_draws_total, n_items) of every member's ability draws ``thetas`` under item parameters
    ``params`` (a (members, n, D), b (members, n)), plus the residual logits ``res`` (n_items,)."""
    z = np.concatenate([th @ a.T - b for th, a, b in zip(thetas, *params)])
    return sigmoid(z if res is None else z + res[None, :])
