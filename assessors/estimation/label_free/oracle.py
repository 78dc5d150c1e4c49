"""Oracle^l: the accuracy measured on l labelled items of the target dataset, as a yardstick."""
from __future__ import annotations

from typing import Sequence

import numpy as np


def oracle_mae(correct_sets: Sequence[np.ndarray], ls: Sequence[int], n_draws: int = 200, seed: int = 0) -> dict:
    """Expected MAE of oracle^l over target sets, estimated by Monte-Carlo draws without replacement.

    Parameters
    ----------
    correct_sets : sequence of 0/1 arrays
        Per-item grades of each target set; its full mean is the truth.
    ls : sequence of int
        Label budgets.

    Returns
    -------
    dict
        ``{l: MAE}``; NaN for an ``l`` not smaller than the smallest set (labelling a whole set
        is exact, so such an oracle says nothing about the estimators).
    """
    rng = np.random.default_rng(seed)
    out = {}
    smallest = min(int(np.sum(~np.isnan(np.asarray(c, dtype=float)))) for c in correct_sets)
    for l in ls:
        if int(l) >= smallest:
            out[int(l)] = float("nan")
            continue
        errs = []
        for c in correct_sets:
            c = np.asarray(c, dtype=float)
            c = c[~np.isnan(c)]
            draws = np.array([rng.choice(c, size=int(l), replace=False).mean() for _ in range(n_draws)])
            errs.append(np.mean(np.abs(draws - c.mean())))
        out[int(l)] = float(np.mean(errs))
    return out


def matched_oracle(mae: float, oracle: dict) -> int:
    """Largest ``l`` whose oracle^l MAE is at least ``mae`` (0 if the method beats no oracle)."""
    ok = [l for l, m in oracle.items() if np.isfinite(m) and mae <= m]
    return max(ok) if ok else 0


def known_probability_mae(probability_sets: Sequence[np.ndarray]) -> float:
    """Expected MAE of the best label-free estimate: one that knows every item's success probability.

    A set's accuracy is the mean of independent Bernoulli(``p_i``) grades. An estimator that sees no
    grade still misses the grades' own noise: its lowest expected absolute error is reached by the
    median of the Poisson-binomial law of that mean, and is computed here exactly. So it is the
    floor of every label-free method on sets of that size (oracle^l has no such floor: it reaches 0
    as ``l`` reaches the set size).

    Parameters
    ----------
    probability_sets : sequence of arrays of shape (n_items,)
        Per-item success probabilities of each set; NaN dropped.

    Returns
    -------
    float
        Mean over sets of ``min_a E |mean(grades) - a|``.
    """
    errs = []
    for p in probability_sets:
        p = np.asarray(p, dtype=float)
        p = p[~np.isnan(p)]
        pmf = np.ones(1)
        for q in p:  # law of the number of successes, one item at a time
            pmf = np.append(pmf * (1 - q), 0.0) + np.append(0.0, pmf * q)
        median = np.searchsorted(np.cumsum(pmf), 0.5)  # minimises the expected absolute error
        errs.append(float(pmf @ np.abs(np.arange(len(p) + 1) - median)) / len(p))
    return float(np.mean(errs))
