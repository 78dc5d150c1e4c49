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

The trust report and the served predictor are built from these methods by the trust layer.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Sequence

import numpy as np

from assessors.core.evidence import Evidence
from assessors.errors import DataError, NoPosteriorError

#: One LLM's state: what :meth:`Assessor.describe` returns and :meth:`Assessor.predict_state` takes.
LLMState = Any


class Assessor(ABC):
    """The interface of every assessor family (see the module docstring).

    Subclasses implement :meth:`fit`, :meth:`describe`, :meth:`describe_reference` and
    :meth:`predict_state`; the batched methods and :meth:`require_posterior` have defaults.
    """

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
