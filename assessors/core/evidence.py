"""An LLM's evidence: graded answers on any items the model's featurizer can embed.

The reference set is one way to describe a new LLM; :class:`Evidence` is the general one: the
features of the items it answered and its 0/1 answers. An assessor with a posterior over abilities
(``assessor=latent``, :meth:`LatentAssessor.evidence_posterior`) turns evidence into a posterior and
scores any prompt from it; the other assessors condition on the reference set only, and
:func:`require_evidence_support` says so with a :class:`~assessors.errors.NoPosteriorError`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from assessors.core.posterior import check_answers
from assessors.errors import DataError, NoPosteriorError
from assessors.tags import capability


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


def require_evidence_support(assessor, what: str = "evidence on prompts outside the reference set",
                             instead: str = "reference=...", error: type = NoPosteriorError) -> None:
    """Raise ``error`` (a :class:`NoPosteriorError`) naming ``assessor=latent`` unless ``assessor``
    supports evidence; ``instead`` names the caller's way to give reference results."""
    if not capability(assessor, "has_posterior"):
        raise error(
            f"{what} needs an assessor with a posterior over abilities (train with assessor=latent); this model "
            f"holds {type(assessor).__name__}, which conditions on the reference set only: describe the LLM by its "
            f"results on the model's reference prompts ({instead}) instead")


def evidence_from_answers(X: np.ndarray, answers: Sequence, ids: Sequence[str] | None = None) -> Evidence:
    """:class:`Evidence` from features ``X`` (n, d) and answers (0/1, None or NaN = not answered)."""
    y = np.array([np.nan if v is None else v for v in answers], dtype=np.float64)
    return Evidence(X, y, None if ids is None else tuple(ids))
