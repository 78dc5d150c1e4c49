"""Adaptive question selection for a new LLM under the latent-ability model.

Each next prompt is the candidate that is expected to teach the most about the LLM's abilities
(computerised adaptive testing). Under the Laplace posterior ``N(theta, Sigma)`` of ensemble member
``m``, answering item ``j`` (discrimination ``a_j``, success probability ``p_j``) adds the Fisher
information ``w_j a_j a_j^T`` with ``w_j = p_j (1 - p_j)``. Two gains are summed over members:

* ``d_optimal``: ``log(1 + w_j a_j^T Sigma a_j)``, the log-determinant shrink of the posterior
  (what ranking the LLM's prompts depends on);
* ``accuracy``: the reduction of the posterior variance of the LLM's expected accuracy on the
  target prompts, ``w_j (g^T Sigma a_j)^2 / (1 + w_j a_j^T Sigma a_j)`` with ``g`` the gradient of
  the mean target probability with respect to ``theta`` (a c-optimal design).

* ``target``: the reduction of the summed posterior variance of the success probabilities of the
  target prompts, ``w_j a_j^T Sigma G Sigma a_j / (1 + w_j a_j^T Sigma a_j)`` with
  ``G = mean_t (p_t (1 - p_t))^2 a_t a_t^T`` (an A-optimal design on the target predictions). Unlike
  ``d_optimal`` it does not chase prompts whose discrimination is extreme but whose direction
  matters for few target prompts (on real data, D-optimal picks piled up in one BBH subtask).

``mixed`` adds ``d_optimal`` and ``accuracy`` after scaling each by its best candidate, so neither
dominates by units.

``strata > 0`` stratifies the pool (KMeans on the prompt features) and takes each next prompt from
the strata asked least so far, the most informative one there. Pure greedy picks pile up where the
item network's discrimination is extreme (on BBH+MuSR, one subtask took 29 of the first 30 picks), and
the answers then say little about the rest of the target; stratified picks cover the prompt space
(as a-stratified adaptive testing limits the exposure of high-discrimination items).
Information-greedy picks are not a representative sample of the target prompts, so the accuracy
estimate is never the raw mean of the asked items: it is the posterior-predictive mean over the
target prompts (:meth:`AdaptiveSelector.estimate`). ``explore`` interleaves uniformly random
candidates (a fixed seeded order); given the history, each is a uniform draw from the prompts not
asked yet, so those answers give a design-unbiased estimate of the accuracy whatever the model's
bias (:mod:`assessors.onboarding.design_estimate`); ``estimator`` chooses which estimate is reported
first.

Selection is a pure function of the seed and the ordered ``(asked, answers)`` history, so a
resumed onboarding that replays its journal continues exactly the same sequence.
"""
from __future__ import annotations

import logging
from typing import Sequence

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from scipy.stats import norm

from assessors.errors import ConfigError, DataError
from assessors.onboarding.information import (accuracy_gradient, answer_update, information_gains,
                                              target_second_moment)

log = logging.getLogger(__name__)

CRITERIA = ("d_optimal", "accuracy", "target", "mixed", "random")
ESTIMATORS = ("model", "design", "composite")


class AdaptiveSelector(BaseEstimator):
    """Pick the next prompt(s) to ask a new LLM from a candidate pool.

    Parameters
    ----------
    criterion : {"d_optimal", "accuracy", "target", "mixed", "random"}
        Information gain to maximise (see the module docstring); ``random`` asks the pool in the
        seeded random order (the baseline).
    batch_size : int
        Prompts returned per call of :meth:`next` (greedy within the batch: each pick updates the
        covariance as if answered, with the current success probability).
    budget : int
        Maximum number of questions.
    min_questions : int
        Never stop before this many answers.
    strata : int
        Number of prompt strata (KMeans clusters of the pool's features) to spread the questions
        over; 0 switches stratification off.
    explore : float in [0, 1)
        Fraction of questions taken uniformly at random from the pool (a seeded order) instead of
        by information; ``0`` is pure greedy.
    stop_width : float, optional
        Stop once the 90% band of the expected accuracy on the target prompts is narrower than this
        *and* the expected accuracy moved less than ``stop_delta`` over the last ``stop_patience``
        answers. None: stop at the budget only.
    stop_delta : float
    stop_patience : int
    seed : int
        Seeds the exploration order and tie-breaking; selection is deterministic given it.
    estimator : {"model", "design", "composite"}
        The accuracy estimate :meth:`estimate` reports as ``accuracy`` / ``low`` / ``high`` when it
        is given the history: the posterior-predictive mean (``model``), the sequential difference
        estimate from the random steps (``design``; the model's when fewer than 2 random answers),
        or their precision-weighted ``composite``. All three are in the returned dict.
    bias_sd : float
        Between-LLM standard deviation of the model estimate's bias, added to its variance in the
        ``composite`` weight (set from validation LLMs; see docs/adaptive_onboarding.md).

    Attributes
    ----------
    a_pool_ : ndarray of shape (n_members, n_pool, D)
    b_pool_ : ndarray of shape (n_members, n_pool)
    a_target_, b_target_ : ndarray
        The same for the target prompts (the pool's own when no target is given).
    strata_ : ndarray of shape (n_pool,)
        Stratum of each pool prompt (all 0 without stratification).
    order_ : ndarray of shape (n_pool,)
        The seeded random order (exploration picks and ties).
    """

    def __init__(self, criterion: str = "mixed", batch_size: int = 1, budget: int = 20, min_questions: int = 5,
                 strata: int = 20, explore: float = 0.0, stop_width: float | None = None, stop_delta: float = 0.01,
                 stop_patience: int = 3, seed: int = 0, estimator: str = "model", bias_sd: float = 0.03):
        self.criterion = criterion
        self.batch_size = batch_size
        self.budget = budget
        self.min_questions = min_questions
        self.strata = strata
        self.explore = explore
        self.stop_width = stop_width
        self.stop_delta = stop_delta
        self.stop_patience = stop_patience
        self.seed = seed
        self.estimator = estimator
        self.bias_sd = bias_sd

    # ------------------------------------------------------------------ fit
    def fit(self, assessor, X_pool: np.ndarray, X_target: np.ndarray | None = None) -> "AdaptiveSelector":
        """Cache the item parameters of the candidate pool and of the target prompts.

        Parameters
        ----------
        assessor : LatentAssessor
            Fitted; anything with ``item_parameters``, ``posterior`` and ``predict_posterior``.
        X_pool : ndarray of shape (n_pool, d)
            Features of the candidate prompts.
        X_target : ndarray of shape (n_target, d), optional
            Features of the prompts whose accuracy matters (default: the pool).
        """
        self._check_params()
        for attr in ("item_parameters", "posterior", "predict_posterior", "priors_"):
            if not hasattr(assessor, attr):
                raise ConfigError(f"adaptive selection needs the latent assessor (assessor=latent); "
                                  f"{type(assessor).__name__} has no {attr}()")
        X_pool = np.asarray(X_pool, dtype=np.float32)
        if X_pool.ndim != 2 or len(X_pool) == 0:
            raise DataError(f"adaptive selection: the candidate pool is empty (features of shape {X_pool.shape})")
        self.assessor_ = assessor
        self.X_pool_ = X_pool
        self.X_target_ = X_pool if X_target is None else np.asarray(X_target, dtype=np.float32)
        self.target_is_pool_ = X_target is None
        self.memo_ = {}  # posterior predictions per answered prefix (design estimate)
        self.a_pool_, self.b_pool_ = (np.asarray(v, np.float64) for v in assessor.item_parameters(X_pool))
        if X_target is None:
            self.a_target_, self.b_target_ = self.a_pool_, self.b_pool_
        else:
            self.a_target_, self.b_target_ = (np.asarray(v, np.float64) for v in assessor.item_parameters(self.X_target_))
        self.order_ = np.random.default_rng(int(self.seed)).permutation(len(X_pool))
        self.strata_ = np.zeros(len(X_pool), dtype=int)
        if int(self.strata) > 1 and len(X_pool) > int(self.strata):
            from sklearn.cluster import KMeans

            km = KMeans(n_clusters=int(self.strata), random_state=int(self.seed), n_init=1).fit(X_pool)
            self.strata_ = km.labels_.astype(int)
        return self

    def _check_params(self) -> None:
        """Bad settings are a :class:`ConfigError` naming the setting."""
        if self.criterion not in CRITERIA:
            raise ConfigError(f"adaptive criterion must be one of {CRITERIA}, got {self.criterion!r}")
        if self.estimator not in ESTIMATORS:
            raise ConfigError(f"adaptive estimator must be one of {ESTIMATORS}, got {self.estimator!r}")
        if not 0.0 <= float(self.explore) < 1.0:
            raise ConfigError(f"adaptive explore must be in [0, 1), got {self.explore}")
        if int(self.batch_size) < 1 or int(self.budget) < 1:
            raise ConfigError(f"adaptive batch_size and budget must be >= 1, got {self.batch_size}, {self.budget}")

    def _eligible(self, taken: np.ndarray, asked: list[int]) -> np.ndarray:
        """Candidates of the strata asked least so far (among strata with candidates left), as a mask."""
        free = ~taken
        counts = np.bincount(self.strata_[asked], minlength=self.strata_.max() + 1) if asked else \
            np.zeros(self.strata_.max() + 1, dtype=int)
        open_strata = np.unique(self.strata_[free])
        least = open_strata[counts[open_strata] == counts[open_strata].min()]
        return free & np.isin(self.strata_, least)

    def _check(self):
        check_is_fitted(self, "a_pool_", msg="AdaptiveSelector is not fitted; call fit(assessor, X_pool) first")

    # ------------------------------------------------------------ posterior
    def posterior(self, asked: Sequence[int], answers: Sequence[float]):
        """The assessor's posterior of one LLM given its answers on pool positions ``asked``."""
        self._check()
        asked = np.asarray(asked, dtype=int)
        y = np.asarray(answers, dtype=np.float64)
        if len(asked) != len(y):
            raise DataError(f"{len(asked)} asked prompts but {len(y)} answers")
        return self.assessor_.posterior(self.X_pool_[asked], y[None, :])

    def ability(self, asked: Sequence[int], answers: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
        """MAP abilities (n_members, D) and Laplace covariances (n_members, D, D) of one LLM.

        The latent part of :meth:`posterior` only (no residual), from the cached pool item
        parameters: what selection needs, without re-featurizing the asked prompts.
        """
        from assessors.irt_math import laplace_posterior

        self._check()
        asked = np.asarray(asked, dtype=int)
        y = np.asarray(answers, dtype=np.float64)[None, :]
        ths, covs = [], []
        for m, prior in enumerate(self.assessor_.priors_):
            if len(asked) == 0:
                ths.append(prior.mean)
                covs.append(prior.cov)
                continue
            th, cov = laplace_posterior(self.a_pool_[m, asked], self.b_pool_[m, asked], y, prior.mean, prior.precision)
            ths.append(th[0])
            covs.append(cov[0])
        return np.stack(ths), np.stack(covs)

    def estimate(self, post, level: float = 0.9, asked: Sequence[int] | None = None,
                 answers: Sequence[float] | None = None) -> dict:
        """Expected accuracy on the target prompts, with a ``level`` band.

        Parameters
        ----------
        post : LatentPosterior
            The posterior of the answers (one LLM).
        asked, answers : sequence of length n_asked, optional
            The history in asking order (pool positions; NaN for unanswered). With it the design
            and composite estimates are added and ``estimator`` picks the headline.

        Returns
        -------
        dict with ``accuracy``, ``low``, ``high``, ``width``, ``sd`` (the headline estimate),
        ``model_accuracy`` / ``model_low`` / ``model_high`` / ``model_sd`` (posterior-predictive
        mean over the target prompts, band from ability uncertainty by the delta method); with the
        history also ``design_*`` (None with fewer than 2 random answers), ``n_random``,
        ``composite_*`` and ``composite_weight``.
        """
        from assessors.onboarding.design_estimate import composite, design_estimate

        mean = float(self.predict_target(post).mean())
        sd = float(np.sqrt(np.mean([g @ c @ g for g, c in zip(self._target_gradient(post), post.cov[:, 0])])))
        z = float(norm.ppf(0.5 + level / 2))
        model = {"accuracy": mean, "low": max(0.0, mean - z * sd), "high": min(1.0, mean + z * sd), "sd": sd}
        out = {f"model_{k}": v for k, v in model.items()}
        head = model
        if asked is not None:
            design = design_estimate(self, asked, answers, level)
            comp = composite(model, design, self.bias_sd, level)
            out.update({f"design_{k}": v for k, v in design.items() if k != "n_random"}, n_random=design["n_random"])
            out.update({f"composite_{k}": v for k, v in comp.items()})
            if self.estimator == "composite":
                head = comp
            elif self.estimator == "design" and design["accuracy"] is not None:
                head = design
        out.update({k: head[k] for k in ("accuracy", "low", "high", "sd")}, width=head["high"] - head["low"])
        return out

    def predict_target(self, post) -> np.ndarray:
        """Posterior-predictive success probabilities of the target prompts for one LLM, shape (n_target,)
        (the target's item parameters are computed once and kept)."""
        if not hasattr(self.assessor_, "prompt_parts"):
            return self.assessor_.predict_posterior(self.X_target_, post)[0][0]
        if "target_parts" not in self.memo_:
            self.memo_["target_parts"] = self.assessor_.prompt_parts(self.X_target_)
        return self.assessor_.predict_parts(self.memo_["target_parts"], post)[0][0]

    def _target_gradient(self, post) -> np.ndarray:
        return self._gradient(post.theta[:, 0])

    def _gradient(self, th) -> np.ndarray:
        return accuracy_gradient(self.a_target_, self.b_target_, th)

    # ------------------------------------------------------------- selection
    def _is_explore(self, step: int) -> bool:
        e = float(self.explore)
        return e > 0 and np.floor((step + 1) * e) > np.floor(step * e)

    def gains(self, post, exclude: np.ndarray | None = None) -> np.ndarray:
        """Information gain of every pool prompt under ``post`` (one LLM), shape (n_pool,); -inf where excluded."""
        self._check()
        th, cov = post.theta[:, 0], post.cov[:, 0]  # (M, D), (M, D, D)
        return self._gains(th, cov, self._target_gradient(post), exclude)

    def _gains(self, th, cov, g, exclude, G=None):
        if self.criterion == "target" and G is None:
            G = target_second_moment(self.a_target_, self.b_target_, th)
        out = information_gains(self.criterion, self.a_pool_, self.b_pool_, th, cov, g=g, G=G)
        if exclude is not None and len(exclude):
            out[exclude] = -np.inf
        return out

    def next(self, asked: Sequence[int], answers: Sequence[float], n: int | None = None,
             post=None) -> np.ndarray:
        """Pool positions of the next ``n`` (default ``batch_size``) prompts to ask.

        Deterministic given the seed and the ordered history: a replayed journal yields the same picks.
        ``post`` may pass the posterior of ``(asked, answers)`` if the caller already has it.
        """
        self._check()
        asked = [int(i) for i in asked]
        n = int(self.batch_size if n is None else n)
        n = min(n, len(self.order_) - len(asked))
        taken = np.zeros(len(self.order_), dtype=bool)
        taken[asked] = True
        picks: list[int] = []
        if self.criterion == "random":
            return self.order_[~taken[self.order_]][:n]
        if post is None:
            th, cov = self.ability(asked, answers)
        else:
            th, cov = post.theta[:, 0].copy(), post.cov[:, 0].copy()
        g = self._gradient(th)
        G = target_second_moment(self.a_target_, self.b_target_, th) if self.criterion == "target" else None
        for step in range(len(asked), len(asked) + n):
            if self._is_explore(step):
                j = int(self.order_[~taken[self.order_]][0])
            else:
                gain = self._gains(th, cov, g, np.flatnonzero(~self._eligible(taken, asked + picks)), G)
                best = gain.max()
                # ties (e.g. identical prompts) go to the earliest in the seeded order
                tied = np.flatnonzero(gain >= best - 1e-12 * max(abs(best), 1.0))
                j = int(tied[np.argmin(np.argsort(self.order_)[tied])]) if len(tied) > 1 else int(tied[0])
            picks.append(j)
            taken[j] = True
            cov = answer_update(cov, self.a_pool_[:, j], self.b_pool_[:, j], th)  # within a batch
        return np.asarray(picks, dtype=int)

    def should_stop(self, n_answered: int, history: Sequence[dict]) -> tuple[bool, str]:
        """``(stop, reason)`` from the budget and the posterior-width rule.

        ``history`` holds one :meth:`estimate` dict per answered prefix (oldest first).
        """
        if n_answered >= int(self.budget):
            return True, f"budget of {self.budget} questions reached"
        if n_answered >= len(getattr(self, "order_", [])) > 0:
            return True, "candidate pool exhausted"
        if self.stop_width is None or n_answered < int(self.min_questions) or len(history) <= int(self.stop_patience):
            return False, ""
        last = history[-1]
        recent = [h["accuracy"] for h in history[-int(self.stop_patience) - 1:]]
        if last["width"] <= float(self.stop_width) and max(recent) - min(recent) <= float(self.stop_delta):
            return True, (f"expected accuracy {last['accuracy']:.3f} stable (band width {last['width']:.3f} "
                          f"<= {self.stop_width})")
        return False, ""

    # ------------------------------------------------------------- simulation
    def simulate(self, answer, n_max: int | None = None, keep_skipped: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Run the adaptive loop against ``answer(j) -> 0/1/NaN`` for pool position ``j``.

        Unanswerable prompts (NaN) are skipped (recorded as asked, not as answers), as an
        onboarding run skips items the endpoint failed on. Returns the asked positions and their
        answers in order (up to ``n_max`` answers; default the budget; no stopping rule);
        ``keep_skipped`` keeps the skipped prompts in place with NaN answers (the full history,
        what :meth:`estimate` needs to tell the random steps).
        """
        self._check()
        n_max = int(self.budget if n_max is None else n_max)
        asked, y, skipped, seq = [], [], [], []
        while len(asked) < n_max and len(asked) + len(skipped) < len(self.order_):
            hist_pos = asked + skipped
            hist_y = y + [np.nan] * len(skipped)
            for j in self.next(hist_pos, hist_y, n=min(int(self.batch_size), n_max - len(asked))):
                v = answer(int(j))
                seq.append((int(j), float(v)))
                if np.isfinite(v):
                    asked.append(int(j))
                    y.append(float(v))
                else:
                    skipped.append(int(j))
        if keep_skipped:
            return np.asarray([j for j, _ in seq], dtype=int), np.asarray([v for _, v in seq], dtype=np.float64)
        return np.asarray(asked, dtype=int), np.asarray(y, dtype=np.float64)
