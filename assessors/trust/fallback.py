"""Fallback policy: for an out-of-population LLM, blend the generic assessor with (or fall back
to) the "reference only" assessor, a per-LLM classifier trained on its reference results alone.

``p = (1 - w) * p_generic + w * p_reference_only`` for triggered LLMs, ``p_generic`` otherwise.
``w = 1`` is a full fallback. The weight is chosen on validation LLMs: the grid value with the
best mean AUC over the validation LLMs the policy triggers on.
"""
from __future__ import annotations

import logging
from typing import Sequence

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from assessors.errors import DataError

log = logging.getLogger(__name__)


class FallbackPolicy(BaseEstimator):
    """When and how much to trust the reference-only assessor instead of the generic one.

    Parameters
    ----------
    triggers : sequence of str
        Trust-report flags that trigger the policy (any of them), e.g. ``range_above``,
        ``range_below``, ``low_similarity``, ``generic_below_reference_only``.
    weights : sequence of float
        Candidate blend weights in [0, 1] (1 = fall back completely).
    default_weight : float
        Used when fewer than ``min_triggered`` validation LLMs trigger the policy, so the
        weight cannot be chosen on data.
    min_triggered : int
        Triggered validation LLMs needed to choose the weight on them.
    """

    def __init__(self, triggers: Sequence[str] = ("range_above", "range_below", "low_similarity"),
                 weights: Sequence[float] = (0.0, 0.25, 0.5, 0.75, 1.0), default_weight: float = 0.5,
                 min_triggered: int = 2):
        self.triggers = triggers
        self.weights = weights
        self.default_weight = default_weight
        self.min_triggered = min_triggered

    def triggered(self, flags: Sequence[str]) -> bool:
        """Whether a report's flags (or a TrustReport) trigger the policy."""
        flags = getattr(flags, "flags", flags)
        return any(f in flags for f in self.triggers)

    def fit(self, P_generic, P_reference, S, flags: Sequence[Sequence[str]]) -> "FallbackPolicy":
        """Choose the blend weight on validation LLMs.

        Parameters
        ----------
        P_generic, P_reference : ndarray of shape (k, m)
            Validation LLMs' predicted P(success) on validation prompts from each assessor.
        S : ndarray of shape (k, m)
            Their observed success (NaN = not evaluated).
        flags : sequence of length k
            Each LLM's trust-report flags (list of str) or TrustReport.
        """
        from assessors.metrics import masked_auc

        P_generic, P_reference, S = (np.asarray(a, dtype=np.float64) for a in (P_generic, P_reference, S))
        if not (P_generic.shape == P_reference.shape == S.shape) or len(flags) != len(S):
            raise DataError(f"FallbackPolicy.fit: shapes differ: P_generic {P_generic.shape}, P_reference "
                            f"{P_reference.shape}, S {S.shape}, {len(flags)} flag lists")
        on = np.array([self.triggered(f) for f in flags], dtype=bool)
        self.n_triggered_ = int(on.sum())
        rows = []
        for k in np.flatnonzero(on):
            for w in self.weights:
                rows.append((k, float(w), masked_auc(S[k], (1 - w) * P_generic[k] + w * P_reference[k])))
        table = pd.DataFrame(rows, columns=["llm", "weight", "auc"])
        self.scores_ = table.groupby("weight")["auc"].mean() if len(table) else pd.Series(dtype=float)
        if self.n_triggered_ >= self.min_triggered and self.scores_.notna().any():
            self.weight_ = float(self.scores_.idxmax())
            self.chosen_by_ = f"mean AUC over {self.n_triggered_} triggered validation LLMs"
        else:
            self.weight_ = float(self.default_weight)
            self.chosen_by_ = f"default ({self.n_triggered_} triggered validation LLMs < {self.min_triggered})"
        log.info("fallback policy: weight %.2f (%s)", self.weight_, self.chosen_by_)
        return self

    def weight_for(self, flags) -> float:
        """The blend weight for one LLM given its flags (0 if not triggered)."""
        check_is_fitted(self, "weight_", msg="FallbackPolicy is not fitted")
        return self.weight_ if self.triggered(flags) else 0.0

    def blend(self, p_generic, p_reference, flags) -> np.ndarray:
        """Policy output P(success), same shape as ``p_generic`` (one LLM)."""
        w = self.weight_for(flags)
        p_generic = np.asarray(p_generic, dtype=np.float32)
        if w == 0.0:
            return p_generic
        return ((1 - w) * p_generic + w * np.asarray(p_reference, dtype=np.float32)).astype(np.float32)
