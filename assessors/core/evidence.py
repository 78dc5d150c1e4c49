"""An LLM's evidence: graded answers on any items the model's featurizer can embed.

The reference set is one way to describe a new LLM; :class:`Evidence` is the general one: the
features of the items it answered and its 0/1 answers. Every assessor turns evidence into its state
of the LLM (:meth:`~assessors.core.protocol.Assessor.describe`): an assessor with a posterior over
abilities (``assessor=latent``) from any prompts; the paper's generic assessor, which conditions on
the reference set only, reads the answers on the reference prompts out of it
(:func:`reference_answers`, a :class:`MissingReferenceError` naming the missing ones otherwise).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from assessors.core.posterior import check_answers
from assessors.errors import DataError, NoPosteriorError


@dataclass(frozen=True, eq=False)
class Evidence:
    """Graded items of one LLM.

    Attributes
    ----------
    X : ndarray of shape (n, d)
        Features of the items (the model's featurizer, as for the prompts being scored).
    y : ndarray of shape (n,)
        Answers: 0, 1 or NaN (not answered). Other values raise :class:`DataError`.
    ids : tuple of str, length n, optional
        Item ids (for messages and reports).
    """

    X: np.ndarray
    y: np.ndarray
    ids: tuple | None = None

    def __post_init__(self):
        X = np.asarray(self.X, dtype=np.float32)
        if X.ndim != 2:
            raise DataError(f"evidence features must have shape (n_items, n_features), got {X.shape}")
        y = check_answers(np.asarray(self.y, dtype=np.float64).ravel(), "evidence answers")[0]
        if len(y) != len(X):
            raise DataError(f"evidence: {len(y)} answers for {len(X)} items")
        if self.ids is not None and len(self.ids) != len(X):
            raise DataError(f"evidence: {len(self.ids)} ids for {len(X)} items")
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "y", y)
        object.__setattr__(self, "ids", None if self.ids is None else tuple(map(str, self.ids)))

    @property
    def n_items(self) -> int:
        return int(len(self.y))

    @property
    def n_answered(self) -> int:
        return int(np.isfinite(self.y).sum())

    @property
    def accuracy(self) -> float | None:
        """Mean of the answers (None without any)."""
        return float(np.nanmean(self.y)) if self.n_answered else None

    def answered(self) -> tuple[np.ndarray, np.ndarray]:
        """``(X (a, d), y (a,))`` of the answered items only."""
        obs = np.isfinite(self.y)
        return self.X[obs], self.y[obs]


class MissingReferenceError(NoPosteriorError):
    """Evidence for an assessor that conditions on the reference set, without answers on (some of) its
    reference prompts. ``missing``: their positions in the reference set."""

    def __init__(self, message: str, missing: Sequence[int] = ()):
        super().__init__(message)
        self.missing = list(missing)


def reference_positions(X: np.ndarray, reference_features: np.ndarray, owner: str) -> np.ndarray:
    """Where each reference prompt (features ``reference_features`` (n_ref, d)) is among items with
    features ``X`` (n, d): positions (n_ref,), found by the features.

    Raises
    ------
    MissingReferenceError
        Some reference prompts are not among the items; ``owner`` (the assessor's class name) goes into
        the message with the fix.
    """
    ref = np.asarray(reference_features, dtype=np.float64)
    E = np.asarray(X, dtype=np.float64)
    if not len(E):
        nearest, found = np.zeros(len(ref), dtype=int), np.zeros(len(ref), dtype=bool)
    else:
        d = np.sqrt(np.maximum((ref ** 2).sum(1)[:, None] - 2 * ref @ E.T + (E ** 2).sum(1)[None, :], 0))
        nearest = d.argmin(1)
        # the same prompt featurized again may differ in the last bits (batching), never by more
        found = d[np.arange(len(ref)), nearest] <= 1e-3 * np.maximum(1.0, np.linalg.norm(ref, axis=1))
    missing = np.flatnonzero(~found)
    if len(missing):
        raise MissingReferenceError(
            f"evidence on prompts outside the reference set needs an assessor with a posterior over abilities "
            f"(train with assessor=latent); this model holds {owner}, which conditions on the reference set only, "
            f"and {len(missing)} of its {len(ref)} reference prompts are not in the evidence (positions "
            f"{', '.join(map(str, missing[:5]))}{', ...' if len(missing) > 5 else ''}): give the LLM's answers on "
            "the model's reference prompts instead", missing)
    return nearest


def reference_answers(evidence: Evidence, reference_features: np.ndarray, owner: str) -> np.ndarray:
    """The answers (n_ref,) of ``evidence`` on the reference prompts (:func:`reference_positions`; an item
    given with a missing answer counts as not evaluated)."""
    return evidence.y[reference_positions(evidence.X, reference_features, owner)]


def evidence_from_answers(X: np.ndarray, answers: Sequence, ids: Sequence[str] | None = None) -> Evidence:
    """:class:`Evidence` from features ``X`` (n, d) and answers (0/1, None or NaN = not answered)."""
    y = np.array([np.nan if v is None else v for v in answers], dtype=np.float64)
    return Evidence(X, y, None if ids is None else tuple(ids))
