"""Metrics of an assessor's predictions on one LLM, and the paper's win-rate model selection.

Conventions: ``y`` holds outcomes (1 = the LLM succeeded), ``p`` the predicted probability of
success, both of shape (n,). Entries where ``y`` is NaN (cell not evaluated) are dropped by
:func:`evaluate`; the returned ``n`` counts what was scored.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn import metrics as skm

from assessors.errors import DataError

#: Probabilities are clipped to [EPS, 1 - EPS] in the log loss, so one confident miss costs
#: at most -log(EPS) ~ 34.5 nats instead of infinity.
EPS = 1e-15


def _pair(y, p) -> tuple[np.ndarray, np.ndarray]:
    """``y`` and ``p`` as flat float64 arrays of one length."""
    y = np.asarray(y, dtype=np.float64).ravel()
    p = np.asarray(p, dtype=np.float64).ravel()
    if y.shape != p.shape:
        raise DataError(f"y has {len(y)} entries but p has {len(p)}")
    return y, p


def _check(y, p) -> tuple[np.ndarray, np.ndarray]:
    y, p = _pair(y, p)
    if not np.isin(y, (0.0, 1.0)).all():
        i = np.flatnonzero(~np.isin(y, (0.0, 1.0)))[0]
        raise DataError(f"y must be 0/1 (drop NaN first); y[{i}] = {y[i]}")
    if not (np.isfinite(p).all() and ((p >= 0) & (p <= 1)).all()):
        i = np.flatnonzero(~(np.isfinite(p) & (p >= 0) & (p <= 1)))[0]
        raise DataError(f"p must be probabilities in [0, 1]; p[{i}] = {p[i]}")
    return y, p


def auc(y, p) -> float:
    """ROC AUC of shape-(n,) outcomes ``y`` and scores ``p``; NaN (no exception) if ``y`` has one class.

    The value is ``sklearn.metrics.roc_auc_score``'s to the last bit: the same ROC curve (one point per
    distinct score, so ties count one half; collinear points dropped) and the same trapezoids, without
    its input validation, which took most of the time on the per-LLM assessors' small CV folds.
    """
    y, p = _check(y, p)
    if len(np.unique(y)) < 2:
        return float("nan")
    return _roc_auc(y, p)


def _roc_auc(y: np.ndarray, p: np.ndarray) -> float:
    """``roc_auc_score`` of checked float64 outcomes ``y`` (both classes present) and scores ``p``, (n,) each:
    ``roc_curve``'s points (``drop_intermediate``) integrated by ``scipy.integrate.trapezoid``, as scikit-learn does.
    Within a run of tied scores only the last row is a threshold, so the sort's order among ties does not matter."""
    from scipy.integrate import trapezoid

    order = np.argsort(p, kind="stable")[::-1]
    p, y = p[order], y[order]
    last = np.r_[np.flatnonzero(np.diff(p)), y.size - 1]  # the last row of each distinct score
    tps = np.cumsum(y, dtype=np.float64)[last]
    fps = 1 + last.astype(np.float64) - tps
    if fps.shape[0] > 2:
        corner = np.r_[True, np.logical_or(np.diff(fps, 2), np.diff(tps, 2)), True]
        fps, tps = fps[corner], tps[corner]
    fps, tps = np.r_[0.0, fps], np.r_[0.0, tps]
    return float(trapezoid(tps / tps[-1], fps / fps[-1]))


def drop_unevaluated(y, p) -> tuple[np.ndarray, np.ndarray]:
    """``y`` and ``p`` (shape (n,), as float64) without the entries where ``y`` is NaN (not evaluated)."""
    y, p = _pair(y, p)
    keep = ~np.isnan(y)
    return y[keep], p[keep]


def masked_auc(y, p) -> float:
    """ROC AUC over the entries of shape-(n,) ``y`` that are not NaN (cells not evaluated).

    ``p`` may hold anything (even NaN) where ``y`` is NaN. NaN if one class remains.
    """
    return auc(*drop_unevaluated(y, p))


def per_llm_auc(S, P) -> np.ndarray:
    """:func:`masked_auc` of each row: S (outcomes, NaN = not evaluated) and P of shape (k, n) -> (k,)."""
    S, P = np.asarray(S), np.asarray(P)
    if S.shape != P.shape:
        raise DataError(f"S has shape {S.shape} but P has shape {P.shape}")
    return np.array([masked_auc(s, p) for s, p in zip(S, P)], dtype=np.float64)


def brier(y, p) -> float:
    """Brier score: mean of (p - y)^2 over shape-(n,) arrays. NaN for empty input."""
    y, p = _check(y, p)
    if len(y) == 0:
        return float("nan")
    return float(skm.brier_score_loss(y, p, pos_label=1))


def log_loss(y, p, eps: float = EPS) -> float:
    """Mean negative log-likelihood in nats, with ``p`` clipped to [eps, 1 - eps]. NaN for empty input."""
    y, p = _check(y, p)
    if len(y) == 0:
        return float("nan")
    return float(skm.log_loss(y, np.clip(p, eps, 1 - eps), labels=[0, 1]))


def calibration_bins(y, p, n_bins: int = 10) -> pd.DataFrame:
    """Equal-width reliability bins on [0, 1].

    Bin ``b`` holds ``(b/n_bins, (b+1)/n_bins]`` (the first also holds 0), the same
    assignment as :func:`sklearn.calibration.calibration_curve`, which gives no counts.

    Returns
    -------
    pandas.DataFrame with ``n_bins`` rows and columns
        ``lower, upper`` (bin edges), ``count``, ``mean_p`` (mean prediction) and
        ``frac_pos`` (observed success rate); the last two are NaN for empty bins.
    """
    y, p = _check(y, p)
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    ids = np.searchsorted(edges[1:-1], p)  # side="left": right-closed bins, as sklearn does
    count = np.bincount(ids, minlength=n_bins).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_p = np.bincount(ids, weights=p, minlength=n_bins) / count
        frac = np.bincount(ids, weights=y, minlength=n_bins) / count
    return pd.DataFrame({"lower": edges[:-1], "upper": edges[1:], "count": count.astype(int), "mean_p": mean_p, "frac_pos": frac})


def ece(y, p, n_bins: int = 10) -> float:
    """Expected calibration error with ``n_bins`` equal-width bins (see :func:`calibration_bins`).

    ``ECE = sum_b (n_b / n) * |frac_pos_b - mean_p_b|``: the gap between observed success
    rate and mean prediction in each bin, weighted by the share of predictions in that bin.
    Empty bins contribute nothing. NaN for empty input.
    """
    bins = calibration_bins(y, p, n_bins)
    n = bins["count"].sum()
    if n == 0:
        return float("nan")
    full = bins[bins["count"] > 0]
    return float((full["count"] / n * (full["frac_pos"] - full["mean_p"]).abs()).sum())


def evaluate(y, p, n_bins: int = 10) -> dict[str, float]:
    """All metrics for one LLM.

    Parameters
    ----------
    y : array of shape (n,)
        0/1 outcomes; NaN entries (not evaluated) are dropped with their ``p``.
    p : array of shape (n,)
        Predicted success probabilities.

    Returns
    -------
    dict with keys ``auc`` (NaN if only one class remains), ``brier``, ``log_loss``, ``ece``,
    ``n`` (scored entries) and ``base_rate`` (mean of ``y``).
    """
    y, p = drop_unevaluated(y, p)
    return {
        "auc": auc(y, p),
        "brier": brier(y, p),
        "log_loss": log_loss(y, p),
        "ece": ece(y, p, n_bins),
        "n": int(len(y)),
        "base_rate": float(y.mean()) if len(y) else float("nan"),
    }


def win_rates(scores: pd.DataFrame, higher_is_better: bool = True) -> pd.Series:
    """Average win rate of each candidate over validation LLMs (the paper's model selection).

    On one LLM, a candidate's win rate is the fraction of the *other* candidates with a
    score on that LLM that it beats, a tie counting one half. Win rates are then averaged
    over LLMs. A NaN score (e.g. AUC undefined) means the candidate neither plays nor counts
    as an opponent on that LLM; LLMs with fewer than two scored candidates are skipped.

    Parameters
    ----------
    scores : pandas.DataFrame of shape (n_candidates, n_llms)
        Rows are candidates, columns validation LLMs, values e.g. validation AUC.
    higher_is_better : bool
        False for losses (Brier, log loss).

    Returns
    -------
    pandas.Series of shape (n_candidates,), index = ``scores.index``, name ``"win_rate"``,
    values in [0, 1]; NaN for a candidate with no scored LLM. ``idxmax()`` picks the winner
    (first in row order on a tie).
    """
    s = scores.astype(float)
    if not higher_is_better:
        s = -s
    # With average ranks over the scored candidates, rank - 1 = (#beaten) + (#tied) / 2.
    ranks = s.rank(axis=0, method="average", ascending=True)
    opponents = s.notna().sum(axis=0) - 1
    per_llm = (ranks - 1) / opponents.where(opponents > 0)
    return per_llm.mean(axis=1, skipna=True).rename("win_rate")


def rank_by_win_rate(scores: pd.DataFrame) -> pd.DataFrame:
    """Candidates ranked best first by average win rate, ties broken by mean validation score.

    Parameters
    ----------
    scores : pandas.DataFrame of shape (n_candidates, n_llms)
        Validation AUC of each candidate (rows) on each validation LLM (columns).

    Returns
    -------
    pandas.DataFrame of shape (n_candidates, 2)
        Columns ``win_rate`` and ``mean_val_auc``; the first row is the winner. With two
        candidates, equal win rates are common (each wins on half the LLMs), and the row order
        of ``scores`` must not decide.
    """
    table = pd.DataFrame({"win_rate": win_rates(scores), "mean_val_auc": scores.astype(float).mean(axis=1)})
    return table.sort_values(["win_rate", "mean_val_auc"], ascending=False, kind="stable")


def rank_auc(Y: np.ndarray, p: np.ndarray) -> np.ndarray:
    """AUC of scores ``p`` (m,) against each row of outcomes ``Y`` (s, m) at once (Mann-Whitney, ties
    averaged); NaN for a one-class row."""
    from scipy.stats import rankdata

    r = rankdata(p)
    Y = np.asarray(Y, dtype=np.float64)
    n1 = Y.sum(1)
    n0 = Y.shape[1] - n1
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where((n1 > 0) & (n0 > 0), (Y @ r - n1 * (n1 + 1) / 2) / (n1 * n0), np.nan)


def chance_auc_low(n_prompts: int, accuracy: float, level: float) -> float:
    """Lower end of the central ``level`` interval of a chance ranking's AUC on ``n_prompts`` prompts
    of which a share ``accuracy`` succeed (Mann-Whitney null: mean 1/2, variance
    ``(n1 + n0 + 1) / (12 n1 n0)``); NaN when one class is expected empty."""
    from scipy.stats import norm

    n1 = round(n_prompts * accuracy)
    n0 = n_prompts - n1
    if n1 < 1 or n0 < 1:
        return float("nan")
    return float(0.5 - norm.ppf(0.5 + level / 2) * np.sqrt((n1 + n0 + 1) / (12 * n1 * n0)))


def central_interval(values, level: float) -> tuple[float, float]:
    """``(low, high)``: the central ``level`` interval of ``values`` (s,), their ``(1 - level) / 2`` and
    ``(1 + level) / 2`` quantiles (e.g. a band from draws or from per-pair results)."""
    tail = (1.0 - float(level)) / 2.0
    low, high = np.quantile(np.asarray(values, dtype=np.float64), [tail, 1.0 - tail])
    return float(low), float(high)
