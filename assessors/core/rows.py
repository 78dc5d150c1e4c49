"""Lazy (LLM, instance) training rows for the generic assessor.

The generic assessor's training set is the cross product of training LLMs and training
instances; each row joins an instance's features to the LLM's reference vector. A dense
float64 copy of that product would be several GB, so rows are built on demand in float32:
``rows[idx]`` materialises only a batch (what the Lightning MLP consumes), and
:meth:`PairRows.to_array` fills one float32 block at a time (what XGBoost and
scikit-learn need).
"""
from __future__ import annotations

import numpy as np

#: How the instance part of a row is formed from features and the reference set.
INSTANCE_FEATURES = ("embedding", "similarity", "similarity_interaction", "none")


def cosine_similarity(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine similarity of rows of ``a`` (n, d) to rows of ``b`` (m, d) -> (n, m) float32."""
    a = np.asarray(a, dtype=np.float32)
    b = np.asarray(b, dtype=np.float32)
    na = np.linalg.norm(a, axis=1, keepdims=True)
    nb = np.linalg.norm(b, axis=1, keepdims=True)
    return (a / np.maximum(na, 1e-12)) @ (b / np.maximum(nb, 1e-12)).T


class PairRows:
    """Rows ``[instance part(i, l), reference vector(l)]`` for (LLM l, instance i) pairs.

    Parameters
    ----------
    inst : ndarray of shape (n_instances, f)
        Instance part that does not depend on the LLM: the embedding, or the similarity to
        each reference prompt.
    ref : ndarray of shape (n_llms, n_ref)
        Reference-set success vector of each LLM (NaN already filled).
    llm_idx, inst_idx : ndarray of shape (n_pairs,)
        The pairs, as row positions into ``ref`` and ``inst``.
    mode : str
        One of :data:`INSTANCE_FEATURES`. ``similarity_interaction`` adds
        ``similarity * reference success``; ``none`` drops the reference vector
        (the "all train data" baseline).
    """

    def __init__(self, inst: np.ndarray, ref: np.ndarray, llm_idx: np.ndarray, inst_idx: np.ndarray,
                 mode: str = "embedding"):
        if mode not in INSTANCE_FEATURES:
            raise ValueError(f"instance_features must be one of {INSTANCE_FEATURES}, got {mode!r}")
        self.inst = np.asarray(inst, dtype=np.float32)
        self.ref = np.asarray(ref, dtype=np.float32)
        self.llm_idx = np.asarray(llm_idx, dtype=np.int64)
        self.inst_idx = np.asarray(inst_idx, dtype=np.int64)
        self.mode = mode
        f, r = self.inst.shape[1], self.ref.shape[1]
        self.width = {"none": f, "embedding": f + r, "similarity": f + r, "similarity_interaction": 2 * f + r}[mode]

    def __len__(self) -> int:
        return len(self.llm_idx)

    @property
    def shape(self) -> tuple[int, int]:
        return (len(self), self.width)

    def __getitem__(self, idx) -> np.ndarray:
        """Rows for pair positions ``idx`` -> (len(idx), width) float32."""
        li, ii = self.llm_idx[idx], self.inst_idx[idx]
        x = self.inst[ii]
        if self.mode == "none":
            return np.ascontiguousarray(x)
        r = self.ref[li]
        if self.mode == "similarity_interaction":
            # the interaction lets a linear head weight each reference item by how close it is
            return np.concatenate([x, x * r, r], axis=1)
        return np.concatenate([x, r], axis=1)

    def to_array(self, block: int = 65536) -> np.ndarray:
        """Materialise all rows as one float32 array, one block at a time."""
        out = np.empty(self.shape, dtype=np.float32)
        for start in range(0, len(self), block):
            sl = slice(start, min(start + block, len(self)))
            out[sl] = self[np.arange(sl.start, sl.stop)]
        return out


def observed_pairs(success: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Positions and labels of evaluated cells of ``success`` (n_llms, n_instances).

    Returns
    -------
    llm_idx, inst_idx : ndarray of shape (n_pairs,)
    y : ndarray of shape (n_pairs,), float32 in {0, 1}
    """
    llm_idx, inst_idx = np.nonzero(~np.isnan(success))
    return llm_idx, inst_idx, success[llm_idx, inst_idx].astype(np.float32)


def collapse_pairs(inst_idx: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One weighted row per (instance, label) instead of one row per (LLM, instance) pair.

    Without a reference vector every LLM's row for an instance is identical, so a classifier's
    summed loss over the pairs equals its loss over these rows weighted by their counts (the
    "all train data" baseline fits ~n_llms times fewer rows for the same objective).

    Parameters
    ----------
    inst_idx : ndarray of shape (n_pairs,)
        Instance position of each pair.
    y : ndarray of shape (n_pairs,)
        0/1 label of each pair.

    Returns
    -------
    idx : ndarray of shape (n_rows,)
        Instance position of each collapsed row (n_rows <= 2 x distinct instances).
    y : ndarray of shape (n_rows,), float32
    weight : ndarray of shape (n_rows,), float32
        Number of pairs the row stands for.
    """
    inst_idx = np.asarray(inst_idx, dtype=np.int64)
    y = np.asarray(y).astype(np.int64)
    n = int(inst_idx.max()) + 1 if len(inst_idx) else 0
    counts = np.bincount(inst_idx * 2 + y, minlength=2 * n).reshape(n, 2)  # [:, 0] failures, [:, 1] successes
    idx, label = np.nonzero(counts)
    return idx, label.astype(np.float32), counts[idx, label].astype(np.float32)
