"""How alike an LLM's answers are to the training LLMs': the ``low_similarity`` signal of the trust report.

Similarity is Cohen's kappa between success vectors on the items both answered (observed agreement
against the agreement two independent LLMs with the same accuracies reach; "error consistency"),
averaged over the ``k`` nearest training LLMs. Its conformal p-value ranks it among the training LLMs'
own similarities to their nearest others: small when the LLM is less alike to any training LLM than
almost every training LLM is to another, which model-based checks cannot see (an LLM can fit the item
parameters and still fail and pass other prompts than every LLM they were learned from).
"""
from __future__ import annotations

import numpy as np


def kappa(a, B, min_overlap: int = 10) -> np.ndarray:
    """Cohen's kappa of a success vector ``a`` (n,) with each row of ``B`` (k, n), shape (k,).

    0/1 with NaN = not answered; NaN where fewer than ``min_overlap`` items were answered by both or
    chance agreement is already 1 (both constant).
    """
    a = np.asarray(a, dtype=np.float64)
    B = np.atleast_2d(np.asarray(B, dtype=np.float64))
    both = ~np.isnan(B) & ~np.isnan(a)[None, :]
    n = both.sum(1)
    a0, B0 = np.nan_to_num(a)[None, :], np.nan_to_num(B)
    with np.errstate(invalid="ignore", divide="ignore"):
        acc_a, acc_b = (a0 * both).sum(1) / n, (B0 * both).sum(1) / n
        p_obs = ((a0 == B0) & both).sum(1) / n
        p_exp = acc_a * acc_b + (1 - acc_a) * (1 - acc_b)
        k = (p_obs - p_exp) / (1 - p_exp)
    k[(n < min_overlap) | (1 - p_exp < 1e-12)] = np.nan
    return k


def top_k_mean(s, k: int = 3) -> float:
    """Mean of the ``k`` largest finite values of ``s`` (NaN if none)."""
    s = np.asarray(s, dtype=np.float64)
    s = np.sort(s[~np.isnan(s)])[::-1][:k]
    return float(s.mean()) if s.size else float("nan")


def training_profile(T, k: int = 3) -> np.ndarray:
    """Each training LLM's similarity to its ``k`` nearest other training LLMs, shape (n_train_llms,).

    ``T`` (n_train_llms, n): their answers. Constant LLMs (all 0 or all 1) get NaN: kappa with them is 0
    or undefined by construction, and counting them would make any new LLM look typical.
    """
    T = np.atleast_2d(np.asarray(T, dtype=np.float64))
    with np.errstate(invalid="ignore"):
        acc = np.nanmean(T, axis=1)
    out = np.full(len(T), np.nan)
    for i in np.flatnonzero((acc > 0) & (acc < 1)):
        s = kappa(T[i], T)
        s[i] = np.nan
        out[i] = top_k_mean(s, k)
    return out


def similarity(y, T, profile=None, k: int = 3) -> tuple[float, float]:
    """``(similarity, p-value)`` of answers ``y`` (n,) to the training LLMs' answers ``T`` (n_train_llms, n)
    on the same items, against their :func:`training_profile` (``profile``; computed from ``T`` when None;
    conformal: ``(1 + #{s_i <= s}) / (n + 1)``)."""
    s = top_k_mean(kappa(y, T), k)
    ref = np.asarray(training_profile(T, k) if profile is None else profile, dtype=np.float64)
    ref = ref[~np.isnan(ref)]
    if np.isnan(s) or not ref.size:
        return s, float("nan")
    return s, float((1 + np.sum(ref <= s)) / (ref.size + 1))
