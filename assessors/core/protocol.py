"""The assessor protocol: evidence -> LLM state -> predictions with a spread.

Every assessor family (the paper's generic assessor, the specific assessor, the latent assessors)
implements :class:`Assessor`, and the code above the core (routing, onboarding, serving, the pyfunc
model, the tasks) calls only these methods:

- ``fit(X, S, ref_index, validation)`` on the training LLMs;
- ``describe(evidence)``: one LLM's *state* from any graded items of it
  (:class:`~assessors.core.evidence.Evidence`). What a state is belongs to the family: the latent
  assessors' posterior over abilities, the generic assessor's reference vector (read out of the
  evidence), the specific assessor's classifier fitted on the evidence;
- ``describe_known(X, S)`` / ``describe_reference(R)``: the states of many LLMs from all their
  answers, or from their answers on the reference set;
- ``predict_state(X, state)`` / ``predict_states(X, states)``: P(success) and its spread (None where
  the family has none);
- ``require_posterior(what)``: nothing, or the project's typed
  :class:`~assessors.errors.NoPosteriorError` naming ``what`` and the fix. Callers never test what a
  family can do; a family that cannot do a thing says so with this error.

What the trust report of one LLM is computed from (the trust layer calls nothing else):

- ``describe_answered(evidence)``: the state from answers on any subset of the items the family
  conditions on (the paper's assessor: some of its reference prompts, the rest not evaluated);
- ``trust_statistics(evidence, X_target, level, n_samples, rng, seed)``: :class:`TrustStatistics`,
  the prediction, the accuracy band and draws of the true success probabilities (a family without a
  spread has its prediction as the only draw) and the state's distance from the training population;
- ``population_accuracy(X_target, training_reference)``: the training LLMs' expected accuracy on the
  target prompts (the range a new LLM is compared with);
- ``project(X)``: the prompt features a fallback fitted on one LLM's answers works on.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from assessors.core.evidence import Evidence
from assessors.errors import DataError, NoPosteriorError

#: One LLM's state: what :meth:`Assessor.describe` returns and :meth:`Assessor.predict_state` takes.
LLMState = Any


@dataclass
class TrustStatistics:
    """What a family gives the trust report of one LLM (``m`` target prompts, ``n`` answered items).

    Attributes
    ----------
    p_target : ndarray of shape (m,)
        The prediction on the target prompts.
    expected_accuracy : float
    accuracy_band : tuple of float
        Central band of the realised accuracy on the target prompts.
    P_target : ndarray of shape (n_draws, m)
        Draws of the true success probabilities (the prediction itself where the family has no spread).
    P_answered : ndarray of shape (n_draws, n) or None
        The same on the answered items (the misfit check); None without answers.
    distance, distance_max : float
        The state's distance from the training population and the largest training LLM's (NaN: the
        family has no population of states).
    """

    p_target: np.ndarray
    expected_accuracy: float
    accuracy_band: tuple[float, float]
    P_target: np.ndarray
    P_answered: np.ndarray | None
    distance: float = float("nan")
    distance_max: float = float("nan")


class Assessor(ABC):
    """The interface of every assessor family (see the module docstring).

    Subclasses implement :meth:`fit`, :meth:`describe`, :meth:`describe_reference` and
    :meth:`predict_state`; the batched methods and :meth:`require_posterior` have defaults.
    """

    #: What reports and outputs call the family's own predictions (e.g. the predictor a trust verdict kept).
    family_name = "model"

    @abstractmethod
    def fit(self, X: np.ndarray, S: np.ndarray, ref_index: np.ndarray, validation=None) -> "Assessor":
        """Fit on the training LLMs' answers and return ``self``.

        ``X`` (n, d) holds the training prompts' features, ``S`` (n_llms, n) the answers (0/1, NaN = not
        evaluated), ``ref_index`` (n_ref,) the reference prompts' positions in ``X``; ``validation`` is
        ``(X_val (m, d), S_val (k, m), R_val (k, n_ref))`` of the validation LLMs, or None. Every family
        takes this one signature, so the options of ``conf/assessor/`` are interchangeable.
        """

    @abstractmethod
    def describe(self, evidence: Evidence) -> LLMState:
        """The state of one LLM from its graded items.

        Raises
        ------
        NoPosteriorError
            The family cannot use this evidence (the message names what is missing and the fix).
        """

    @abstractmethod
    def describe_reference(self, R: np.ndarray) -> list[LLMState]:
        """The states of ``k`` LLMs from their reference answers ``R`` (k, n_ref) (0/1, NaN = not answered)."""

    def describe_known(self, X: np.ndarray, S: np.ndarray, ref_index: np.ndarray | None = None) -> list[LLMState]:
        """The states of ``k`` LLMs from all their answers ``S`` (k, n) on prompts ``X`` (n, d)
        (e.g. the training LLMs, so that a served model scores them from everything it saw).
        ``ref_index`` (n_ref,): where the reference prompts are in ``X`` when the caller knows it (the
        training prompts); a family that reads the reference answers takes them from there."""
        S = np.atleast_2d(np.asarray(S, dtype=np.float64))
        return [self.describe(Evidence(X, s)) for s in S]

    @abstractmethod
    def predict_state(self, X: np.ndarray, state: LLMState) -> tuple[np.ndarray, np.ndarray | None]:
        """``(p, p_std)`` of shape (m,) each for prompts ``X`` (m, d); ``p_std`` is None where the family
        gives no spread."""

    def predict_states(self, X: np.ndarray, states: Sequence[LLMState]) -> tuple[np.ndarray, np.ndarray | None]:
        """``(P, P_std)`` of shape (k, m) each for ``k`` states; ``P_std`` None where the family gives no spread."""
        out = [self.predict_state(X, s) for s in states]
        P = np.stack([np.asarray(p, np.float32) for p, _ in out]) if out else np.zeros((0, len(X)), np.float32)
        stds = [s for _, s in out]
        if not out or any(s is None for s in stds):
            return P, None
        return P, np.stack([np.asarray(s, np.float32) for s in stds])

    def describe_answered(self, evidence: Evidence) -> LLMState:
        """The state of one LLM from answers on any subset of the items the family conditions on
        (default: :meth:`describe`)."""
        return self.describe(evidence)

    def trust_statistics(self, evidence: Evidence, X_target: np.ndarray, *, level: float = 0.9,
                         n_samples: int = 300, rng=None, seed: int = 0) -> TrustStatistics:
        """What the trust report of the LLM answering ``evidence`` is computed from, about prompts
        ``X_target`` (m, d) (see :class:`TrustStatistics`).

        This default is a family without a spread: its prediction is the only draw, the accuracy band
        that of Bernoulli outcomes (``n_samples`` draws, ``seed``), each answered item is predicted from
        the state without its own answer (:meth:`held_out_predictions`: with it the input would hold the
        label) and there is no distance. ``rng`` is the report's generator (unused here).
        """
        X_target = np.asarray(X_target, dtype=np.float32)
        p, _ = self.predict_state(X_target, self.describe_answered(evidence))
        p = np.asarray(p, dtype=np.float64)
        tail = (1 - level) / 2
        acc = (np.random.default_rng(seed).random((n_samples, len(p))) < p).mean(1)
        loo = self.held_out_predictions(evidence) if evidence.n_answered else None
        return TrustStatistics(p, float(p.mean()), (float(np.quantile(acc, tail)), float(np.quantile(acc, 1 - tail))),
                               np.broadcast_to(p, (n_samples, len(p))),
                               None if loo is None else np.broadcast_to(loo, (n_samples, len(loo))))

    def held_out_predictions(self, evidence: Evidence) -> np.ndarray:
        """P(success) (n_answered,) of each answered item of ``evidence`` from the state described
        without its answer (in the order of :meth:`Evidence.answered`)."""
        X, y = evidence.answered()
        out = np.empty(len(y))
        for i in range(len(y)):
            keep = np.arange(len(y)) != i
            out[i] = self.predict_state(X[i:i + 1], self.describe_answered(Evidence(X[keep], y[keep])))[0][0]
        return out

    def population_accuracy(self, X_target: np.ndarray, training_reference: np.ndarray | None = None) -> np.ndarray:
        """The training LLMs' expected accuracy (n_train_llms,) on prompts ``X_target`` (m, d), from their
        reference answers ``training_reference`` (n_train_llms, n_ref); ``[nan]`` without them."""
        if training_reference is None:
            return np.array([np.nan])
        P, _ = self.predict_states(np.asarray(X_target, dtype=np.float32), self.describe_reference(training_reference))
        return np.asarray(P, dtype=np.float64).mean(1)

    def project(self, X: np.ndarray) -> np.ndarray:
        """The prompt features (m, c) a fallback fitted on one LLM's answers works on (default: ``X``)."""
        return np.asarray(X, dtype=np.float32)

    def check_evidence(self, evidence: Evidence) -> Evidence:
        """``evidence`` if its features have the width of the model's prompt features (``reference_features_``,
        when fitted), else a :class:`DataError` naming the fix."""
        if not isinstance(evidence, Evidence):
            raise DataError(f"evidence must be an assessors.core.evidence.Evidence, got {type(evidence).__name__}")
        ref = getattr(self, "reference_features_", None)
        d = evidence.X.shape[1] if ref is None else ref.shape[1]
        if evidence.X.shape[1] != d:
            raise DataError(f"evidence features have {evidence.X.shape[1]} columns but this model's prompt features "
                            f"have {d}: featurize the evidence prompts with the model's featurizer")
        return evidence

    def require_posterior(self, what: str) -> None:
        """Raise :class:`NoPosteriorError` naming ``what`` unless the family has a posterior over abilities
        (adaptive onboarding, the posterior trust report); families with one override this to return."""
        raise NoPosteriorError(f"{what} needs an assessor with a posterior over abilities (train with "
                               f"assessor=latent); this model holds {type(self).__name__}")
