"""The router contract: ``score()`` per policy, ``route()`` and ``calibrate()`` once, here.

A policy turns P(success) and expected cost of every (LLM, prompt) pair into a utility; the
base class picks, per prompt, the LLM of highest utility. Pairs a policy rules out get
utility -inf; when every LLM is ruled out the router either falls back to the most likely
LLM or abstains ("reject before you run").
"""
from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator

from assessors.errors import ConfigError, DataError

ABSTAIN = -1


@dataclass
class Routing:
    """Decisions for a batch of prompts.

    Attributes
    ----------
    llms : list of str, length k
    choice : ndarray of shape (m,)
        Index into ``llms`` of the chosen LLM, -1 = abstain.
    p_success : ndarray of shape (k, m)
    cost : ndarray of shape (k, m)
        Expected cost of each LLM on each prompt.
    """

    llms: list[str]
    choice: np.ndarray
    p_success: np.ndarray
    cost: np.ndarray

    @property
    def chosen(self) -> list[str | None]:
        return [self.llms[c] if c >= 0 else None for c in self.choice]

    @property
    def expected_cost(self) -> np.ndarray:
        """Expected cost of the decision per prompt (0 when abstaining), shape (m,)."""
        m = np.arange(self.choice.size)
        return np.where(self.choice >= 0, self.cost[np.maximum(self.choice, 0), m], 0.0)

    @property
    def chosen_p(self) -> np.ndarray:
        m = np.arange(self.choice.size)
        return np.where(self.choice >= 0, self.p_success[np.maximum(self.choice, 0), m], np.nan)

    def records(self) -> list[dict]:
        """One dict per prompt: chosen LLM, every LLM's P(success) and cost, expected cost."""
        exp, chosen = self.expected_cost, self.chosen
        return [{"llm": chosen[j], "abstained": chosen[j] is None,
                 "p_success": {n: float(self.p_success[i, j]) for i, n in enumerate(self.llms)},
                 "cost": {n: float(self.cost[i, j]) for i, n in enumerate(self.llms)},
                 "expected_cost": float(exp[j])} for j in range(self.choice.size)]

    def to_frame(self) -> pd.DataFrame:
        df = pd.DataFrame({"llm": self.chosen, "expected_cost": self.expected_cost, "p_chosen": self.chosen_p})
        for i, n in enumerate(self.llms):
            df[f"p_success[{n}]"] = self.p_success[i]
        return df


def realised(choice: np.ndarray, S: np.ndarray, C: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Outcome and cost of the chosen LLM per prompt, shape (m,) each (NaN / 0 when abstaining)."""
    m = np.arange(choice.size)
    pick = np.maximum(choice, 0)
    return (np.where(choice >= 0, S[pick, m], np.nan), np.where(choice >= 0, C[pick, m], 0.0))


class Router(BaseEstimator, abc.ABC):
    """Base of routing policies.

    Subclasses define :meth:`score` and name the parameter that :meth:`calibrate` tunes
    (``knob``, e.g. ``threshold`` or ``lam``). After calibration the tuned value lives in
    ``<knob>_`` and takes precedence over the configured one.
    """

    #: Name of the parameter swept by :meth:`calibrate` and :meth:`sweep`.
    knob: str = ""
    #: Abstain (choice -1) when every LLM is ruled out, instead of falling back to the most likely one.
    abstain_when_none: bool = False

    @abc.abstractmethod
    def score(self, P: np.ndarray, C: np.ndarray) -> np.ndarray:
        """Utility of each (LLM, prompt), shape (k, m); -inf rules a pair out.

        Parameters
        ----------
        P : ndarray of shape (k, m)
            P(success) of each of ``k`` LLMs on ``m`` prompts.
        C : ndarray of shape (k, m)
            Expected cost.
        """

    @abc.abstractmethod
    def knob_grid(self, P: np.ndarray, C: np.ndarray) -> np.ndarray:
        """Candidate values of :attr:`knob` for calibration and cost-accuracy curves."""

    def check_params(self) -> None:  # noqa: B027 - optional hook
        """Raise :class:`ConfigError` on an invalid parameter (run on first use, not in ``__init__``)."""

    # ------------------------------------------------------------------ decisions
    @property
    def knob_value(self) -> float:
        return float(getattr(self, self.knob + "_", getattr(self, self.knob)))

    def route(self, P: np.ndarray, C: np.ndarray, llms: Sequence[str] | None = None) -> Routing:
        """Choose one LLM per prompt (or abstain).

        Ties in utility go to the cheaper LLM, then to the higher P(success).
        """
        self.check_params()
        P, C = _check(P, C)
        llms = list(llms) if llms is not None else [str(i) for i in range(P.shape[0])]
        if len(llms) != P.shape[0]:
            raise DataError(f"{len(llms)} LLM names for {P.shape[0]} rows of P")
        if P.shape[0] == 0:
            raise DataError("no LLM to route to")
        U = self.score(P, C)
        m = np.arange(P.shape[1])
        # lexicographic argmax: utility, then -cost, then P (np.lexsort sorts by the last key first)
        order = np.lexsort((P, -C, U), axis=0)
        choice = order[-1].astype(int)
        none = ~np.isfinite(U[choice, m])
        if none.any():
            if self.abstain_when_none:
                choice[none] = ABSTAIN
            else:
                best = np.lexsort((-C, P), axis=0)[-1]
                choice[none] = best[none]
        return Routing(llms, choice, P, C)

    # ---------------------------------------------------------------- calibration
    def sweep(self, P: np.ndarray, S: np.ndarray, C: np.ndarray, C_true: np.ndarray | None = None,
              grid: Sequence[float] | None = None) -> pd.DataFrame:
        """Realised accuracy and cost of routing for every knob value.

        Parameters
        ----------
        P, C : ndarray of shape (k, m)
            Predicted P(success) and expected cost (what the router sees).
        S : ndarray of shape (k, m)
            Realised success (NaN cells count as failures).
        C_true : ndarray of shape (k, m), optional
            Realised cost (defaults to ``C``).

        Returns
        -------
        DataFrame with columns ``knob, accuracy, cost, coverage, selective_accuracy``;
        ``accuracy`` counts abstentions as failures, ``cost`` is the total over prompts.
        """
        self.check_params()
        P, C = _check(P, C)
        S = np.nan_to_num(np.asarray(S, dtype=np.float64), nan=0.0)
        C_true = C if C_true is None else np.asarray(C_true, dtype=np.float64)
        grid = self.knob_grid(P, C) if grid is None else np.asarray(grid, dtype=float)
        rows = []
        saved = getattr(self, self.knob + "_", None)
        try:
            for v in grid:
                setattr(self, self.knob + "_", float(v))
                ch = self.route(P, C).choice
                y, c = realised(ch, S, np.nan_to_num(C_true))
                answered = ch >= 0
                rows.append((float(v), float(np.nansum(y)) / len(ch), float(c.sum()), float(answered.mean()),
                             float(np.nanmean(y)) if answered.any() else np.nan))
        finally:
            if saved is None:
                self.__dict__.pop(self.knob + "_", None)
            else:
                setattr(self, self.knob + "_", saved)
        return pd.DataFrame(rows, columns=["knob", "accuracy", "cost", "coverage", "selective_accuracy"])

    def calibrate(self, P: np.ndarray, S: np.ndarray, C: np.ndarray, target_accuracy: float | None = None,
                  budget: float | None = None, C_true: np.ndarray | None = None,
                  grid: Sequence[float] | None = None) -> "Router":
        """Tune :attr:`knob` on validation data; sets ``<knob>_`` and ``calibration_``.

        With ``target_accuracy``: the cheapest setting whose realised accuracy reaches it
        (for abstaining routers: the highest coverage whose accuracy on answered prompts
        reaches it). With ``budget`` (mean cost per prompt): the most accurate setting
        within it. Raises :class:`ConfigError` when no setting meets the target.
        """
        if (target_accuracy is None) == (budget is None):
            raise ConfigError("calibrate needs exactly one of target_accuracy or budget")
        curve = self.sweep(P, S, C, C_true=C_true, grid=grid)
        m = np.asarray(P).shape[1]
        if target_accuracy is not None:
            col = "selective_accuracy" if self.abstain_when_none else "accuracy"
            ok = curve[curve[col] >= float(target_accuracy)]
            if ok.empty:
                raise ConfigError(f"no {self.knob} reaches {col} {target_accuracy} on the {m} validation prompts "
                                  f"(best {curve[col].max():.4f})")
            best = ok.sort_values(["coverage", "cost"], ascending=[False, True]).iloc[0] if self.abstain_when_none \
                else ok.sort_values(["cost", "accuracy"], ascending=[True, False]).iloc[0]
        else:
            ok = curve[curve["cost"] / m <= float(budget)]
            if ok.empty:
                raise ConfigError(f"no {self.knob} keeps the mean cost per prompt within {budget} "
                                  f"(cheapest {curve['cost'].min() / m:.6g})")
            best = ok.sort_values(["accuracy", "cost"], ascending=[False, True]).iloc[0]
        setattr(self, self.knob + "_", float(best["knob"]))
        self.calibration_ = {"knob": self.knob, "value": float(best["knob"]), "accuracy": float(best["accuracy"]),
                             "mean_cost": float(best["cost"]) / m, "coverage": float(best["coverage"]),
                             "n_prompts": int(m), "target_accuracy": target_accuracy, "budget": budget}
        return self


def _check(P, C) -> tuple[np.ndarray, np.ndarray]:
    P = np.asarray(P, dtype=np.float64)
    C = np.asarray(C, dtype=np.float64)
    if P.ndim != 2 or P.shape != C.shape:
        raise DataError(f"P and C must both have shape (n_llms, n_prompts); got {P.shape} and {C.shape}")
    if np.isnan(P).any():
        raise DataError("P(success) contains NaN")
    return P, C
