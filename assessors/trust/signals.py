"""Trust signals computed from a new LLM's reference-set results alone.

* similarity: Cohen's kappa between success vectors (observed agreement against the agreement
  two independent LLMs with the same accuracies would reach; "error consistency" in the
  model-similarity literature), and the nearest training LLMs;
* range: the new LLM's reference accuracy against the training LLMs' accuracy range;
* sufficiency: whether the reference results carry any information at all.

All functions take 0/1 float vectors with NaN for "not evaluated".
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from assessors.errors import DataError


def _as_vector(r, name: str) -> np.ndarray:
    r = np.asarray(r, dtype=np.float64)
    if r.ndim != 1:
        raise DataError(f"{name} must be 1-D (n_ref,), got shape {r.shape}")
    bad = ~np.isnan(r) & (r != 0) & (r != 1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataError(f"{name}[{i}] = {float(r[i])!r}; success values must be 0, 1 or NaN")
    return r


def kappa(a, B, min_overlap: int = 10) -> np.ndarray:
    """Cohen's kappa between one success vector and each row of a matrix.

    ``kappa = (p_obs - p_exp) / (1 - p_exp)`` with ``p_obs`` the share of items on which both
    agree and ``p_exp = acc_a acc_b + (1 - acc_a)(1 - acc_b)`` the agreement expected by chance,
    both over the items both LLMs answered. 1 = identical, about 0 = independent, < 0 = opposite.

    Parameters
    ----------
    a : array-like of shape (n,)
        0/1 with NaN.
    B : array-like of shape (k, n) or (n,)
        0/1 with NaN.
    min_overlap : int
        Pairs with fewer commonly answered items get NaN.

    Returns
    -------
    ndarray of shape (k,) (NaN where undefined: too little overlap, or both LLMs constant so
    chance agreement is already 1).
    """
    a = _as_vector(a, "a")
    B = np.atleast_2d(np.asarray(B, dtype=np.float64))
    if B.shape[1] != a.shape[0]:
        raise DataError(f"B has {B.shape[1]} columns but a has {a.shape[0]} entries")
    both = ~np.isnan(B) & ~np.isnan(a)[None, :]
    n = both.sum(1)
    a0, B0 = np.nan_to_num(a)[None, :], np.nan_to_num(B)
    with np.errstate(invalid="ignore", divide="ignore"):
        acc_a = (a0 * both).sum(1) / n
        acc_b = (B0 * both).sum(1) / n
        p_obs = ((a0 == B0) & both).sum(1) / n
        p_exp = acc_a * acc_b + (1 - acc_a) * (1 - acc_b)
        k = (p_obs - p_exp) / (1 - p_exp)
    k[(n < min_overlap) | (1 - p_exp < 1e-12)] = np.nan
    return k


def pairwise_kappa(S, min_overlap: int = 10) -> np.ndarray:
    """Kappa between all rows of ``S`` (k, n): a (k, k) matrix with NaN on the diagonal."""
    S = np.asarray(S, dtype=np.float64)
    out = np.vstack([kappa(S[i], S, min_overlap) for i in range(len(S))])
    np.fill_diagonal(out, np.nan)
    return out


def nearest(similarities, names, k: int = 3) -> list[tuple[str, float]]:
    """The ``k`` most similar LLMs as ``(name, kappa)``, most similar first (NaN last)."""
    s = np.asarray(similarities, dtype=np.float64)
    order = np.argsort(np.where(np.isnan(s), -np.inf, -s), kind="stable")[:k]
    return [(str(names[i]), float(s[i])) for i in order]


def top_k_mean(similarities, k: int = 3) -> float:
    """Mean of the ``k`` largest finite similarities (NaN if none)."""
    s = np.asarray(similarities, dtype=np.float64)
    s = np.sort(s[~np.isnan(s)])[::-1][:k]
    return float(s.mean()) if s.size else float("nan")


def similarity_pvalue(score: float, reference_scores) -> float:
    """Conformal p-value of a similarity among training LLMs' own nearest-neighbour scores.

    ``(1 + #{i: s_i <= score}) / (n + 1)``: small when the new LLM is less similar to its
    nearest training LLMs than (almost) every training LLM is to its own nearest others.
    """
    ref = np.asarray(reference_scores, dtype=np.float64)
    ref = ref[~np.isnan(ref)]
    if np.isnan(score) or not ref.size:
        return float("nan")
    return float((1 + np.sum(ref <= score)) / (ref.size + 1))


@dataclass
class RangeCheck:
    """Reference accuracy of the new LLM against the training LLMs' range.

    Attributes
    ----------
    accuracy : float
        New LLM's mean success on answered reference items.
    low, high : float
        Lowest and highest training-LLM reference accuracy.
    position : float
        ``(accuracy - low) / (high - low)``: in [0, 1] inside the range.
    excess : float
        Distance outside ``[low, high]`` (0 inside).
    flag : {"above", "below", None}
        Extrapolation above the best / below the worst training LLM (beyond ``margin``).
    """

    accuracy: float
    low: float
    high: float
    position: float
    excess: float
    flag: str | None


def range_check(reference_success, training_reference, margin: float = 0.0) -> RangeCheck:
    """Compare reference accuracy with the training LLMs' (n_train_llms, n_ref) accuracies.

    ``margin`` (in accuracy units) tolerates small excursions before flagging.
    """
    r = _as_vector(reference_success, "reference_success")
    T = np.atleast_2d(np.asarray(training_reference, dtype=np.float64))
    acc = float(np.nanmean(r)) if (~np.isnan(r)).any() else float("nan")
    with np.errstate(invalid="ignore"):
        accs = np.nanmean(T, axis=1)
    accs = accs[~np.isnan(accs)]
    if not accs.size:
        raise DataError("training_reference has no answered reference items")
    low, high = float(accs.min()), float(accs.max())
    width = high - low
    position = (acc - low) / width if width > 0 else float("nan")
    excess = max(0.0, acc - high, low - acc) if acc == acc else float("nan")
    flag = "above" if acc > high + margin else "below" if acc < low - margin else None
    return RangeCheck(acc, low, high, float(position), float(excess), flag)


@dataclass
class Sufficiency:
    """Whether the reference results are informative.

    Attributes
    ----------
    n_reference, n_answered : int
    n_success : int
    warnings : list of str
        Human-readable problems (empty when sufficient).
    """

    n_reference: int
    n_answered: int
    n_success: int
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.warnings


def sufficiency(reference_success, min_answered: int | float = 0.8, min_minority: int = 3) -> Sufficiency:
    """Data-sufficiency checks of one reference vector (n_ref,).

    Parameters
    ----------
    min_answered : int or float
        Minimum answered reference items: a count, or a fraction of ``n_ref`` if < 1.
    min_minority : int
        Fewer successes (or failures) than this means the vector says almost nothing about
        which prompts the LLM gets right.
    """
    r = _as_vector(reference_success, "reference_success")
    n = r.size
    answered = ~np.isnan(r)
    n_ans, n_pos = int(answered.sum()), int(np.nansum(r))
    need = int(np.ceil(min_answered * n)) if min_answered < 1 else int(min_answered)
    warn = []
    if n_ans < need:
        warn.append(f"only {n_ans} of {n} reference items answered (need {need}); "
                    "missing items are filled with the training LLMs' mean")
    if n_ans and n_pos == 0:
        warn.append(f"all {n_ans} answered reference items failed (all-0 vector): "
                    "the assessor cannot tell which prompts this LLM gets right; check the grader")
    elif n_ans and n_pos == n_ans:
        warn.append(f"all {n_ans} answered reference items succeeded (all-1 vector): "
                    "the assessor cannot tell which prompts this LLM gets wrong")
    elif n_ans and min(n_pos, n_ans - n_pos) < min_minority:
        warn.append(f"only {min(n_pos, n_ans - n_pos)} reference "
                    f"{'successes' if n_pos < n_ans - n_pos else 'failures'} out of {n_ans}: little information")
    if n_ans == 0:
        warn.append("no reference item answered")
    return Sufficiency(n, n_ans, n_pos, warn)
