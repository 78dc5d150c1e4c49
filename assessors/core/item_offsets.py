"""What the item network misses about a prompt's difficulty, carried to new prompts by their neighbours.

The item network predicts difficulty from a prompt's features and so smooths over what makes one
prompt harder than its look-alikes. The training LLMs' answers pin that part down for each training
prompt (a MAP difficulty offset, :func:`~assessors.core.latent_bank.difficulty_offsets`). A new prompt
gets the mean offset of its ``k`` nearest training prompts (cosine similarity of the features),
shrunk by how well such a neighbour mean predicts a training prompt's own offset when that prompt is
left out (the least-squares slope, clipped to [0, 1]): offsets that do not carry over to
neighbours are shrunk to nothing.
"""
from __future__ import annotations

import numpy as np

from assessors.core.latent_bank import difficulty_offsets
from assessors.core.latent_net import item_parameters


def _unit_rows(X: np.ndarray) -> np.ndarray:
    X = np.asarray(X, dtype=np.float32)
    return X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12)


def member_offsets(members, X: np.ndarray, answers, sd: float = 1.0, block: int = 2048) -> np.ndarray:
    """Per-member MAP difficulty offsets of the training prompts.

    Parameters
    ----------
    members : list of dict
        Fitted members (``weights``, ``theta`` of the training LLMs).
    X : ndarray of shape (n, d)
        Training prompts' features.
    answers : array of shape (n, n_llms)
        Prompt-major answers: float 0/1 with NaN, or uint8 with 255 for not evaluated (memory-mapped
        answers are read a block of prompts at a time).
    sd : float
        Prior scale of the offsets (logits).

    Returns
    -------
    ndarray of shape (n_members, n)
    """
    out = np.zeros((len(members), len(X)), dtype=np.float32)
    for s in range(0, len(X), block):
        rows = np.asarray(answers[s:s + block])
        S = rows.T.astype(np.float64) if rows.dtype != np.uint8 else np.where(rows.T == 255, np.nan, rows.T)
        for m, member in enumerate(members):
            a, b = item_parameters(member["weights"], X[s:s + block])
            theta = np.asarray(member["theta"], dtype=np.float64)
            out[m, s:s + block] = difficulty_offsets(theta @ a.T - b, S, sd)
    return out


class NeighbourOffsets:
    """Difficulty offsets of new prompts from their ``k`` nearest training prompts.

    Parameters
    ----------
    k : int
        Neighbours averaged.
    block : int
        Query prompts compared with the training prompts at a time (bounds memory at ``block x n``).

    Attributes
    ----------
    features_ : ndarray of shape (n, d), float16
        Unit-norm training features (half precision: only their ranking of neighbours is used).
    offsets_ : ndarray of shape (n_members, n)
    shrink_ : ndarray of shape (n_members,)
        Leave-one-out slope of a prompt's own offset on its neighbours' mean, in [0, 1].
    """

    def __init__(self, k: int = 10, block: int = 1024):
        self.k = k
        self.block = block

    def fit(self, X: np.ndarray, offsets: np.ndarray) -> "NeighbourOffsets":
        """``X`` (n, d) training features, ``offsets`` (n_members, n) their MAP offsets."""
        self.features_ = _unit_rows(X).astype(np.float16)
        self.offsets_ = np.asarray(offsets, dtype=np.float32)
        k = min(int(self.k), len(X) - 1)
        if k < 1:
            self.shrink_ = np.zeros(len(self.offsets_), dtype=np.float32)
            return self
        mean = self.offsets_[:, self._neighbours(self.features_, k, exclude_self=True)].mean(-1)
        num, den = (self.offsets_ * mean).sum(1), (mean * mean).sum(1)
        self.shrink_ = np.clip(np.where(den > 0, num / np.maximum(den, 1e-12), 0.0), 0.0, 1.0).astype(np.float32)
        return self

    def _neighbours(self, Q: np.ndarray, k: int, exclude_self: bool = False) -> np.ndarray:
        """Indices (m, k) of each query row's ``k`` most similar training prompts."""
        F = self.features_.astype(np.float32)
        idx = np.empty((len(Q), k), dtype=np.int64)
        for s in range(0, len(Q), int(self.block)):
            sim = Q[s:s + self.block].astype(np.float32) @ F.T
            if exclude_self:  # leave-one-out: a training prompt is not its own neighbour
                sim[np.arange(sim.shape[0]), np.arange(s, s + sim.shape[0])] = -np.inf
            idx[s:s + self.block] = np.argpartition(-sim, k - 1, axis=1)[:, :k]
        return idx

    def __call__(self, X: np.ndarray) -> np.ndarray:
        """Shrunk neighbour-mean offsets of prompts ``X`` (m, d): shape (n_members, m)."""
        k = min(int(self.k), len(self.features_))
        if not len(X) or k < 1:
            return np.zeros((len(self.offsets_), len(X)), dtype=np.float32)
        idx = self._neighbours(_unit_rows(X), k)
        return self.shrink_[:, None] * self.offsets_[:, idx].mean(-1)
