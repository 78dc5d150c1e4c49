"""Adaptive onboarding over an assessor's reference set, for LLMs kept in an LLM registry.

The server onboards a new LLM in rounds: it proposes the next reference prompts to ask
(:meth:`ReferenceSetOnboarding.next`), the client grades the LLM's answers and posts them back, and
the answers become the LLM's (partial) reference vector, so scoring and routing use them at once.
The pool is the model's reference set because a logged model carries the features of those prompts
only (:attr:`LatentAssessor.reference_features_`); answers elsewhere would need the prompt text.

Selection is :class:`~assessors.onboarding.adaptive.AdaptiveSelector` under the LLM's current
posterior, a pure function of the answered items in the order they were posted (kept with the LLM),
so asking twice without answering returns the same prompts.
"""
from __future__ import annotations

import threading
from typing import Sequence

import numpy as np

from assessors.errors import DataError


class ReferenceSetOnboarding:
    """Next prompts and the stopping rule for LLMs described by answers on the reference set.

    Parameters
    ----------
    assessor : LatentAssessor
        Fitted; needs ``posterior`` and ``reference_features_``.
    reference_ids : sequence of str, length n_ref
    selector_params : dict
        :class:`AdaptiveSelector` parameters (criterion, strata, budget, stop_width, ...).
    """

    def __init__(self, assessor, reference_ids: Sequence[str], selector_params: dict | None = None):
        from assessors.onboarding.adaptive import AdaptiveSelector

        assessor.require_posterior("adaptive onboarding")
        self.ids = list(reference_ids)
        self.pos = {k: i for i, k in enumerate(self.ids)}
        params = dict(selector_params or {})
        # stratify only when the reference set has several prompts per stratum
        params.setdefault("strata", min(20, len(self.ids) // 5))
        self.selector = AdaptiveSelector(**params).fit(assessor, np.asarray(assessor.reference_features_))

    def positions(self, ids: Sequence[str], what: str = "ids") -> list[int]:
        """Reference positions of ``ids``; unknown or repeated ids are a :class:`DataError` naming them."""
        unknown = [i for i in ids if i not in self.pos]
        if unknown:
            raise DataError(f"{what}: {len(unknown)} id(s) are not reference ids of this assessor, e.g. "
                            f"{unknown[:3]} (GET /v1/reference lists them)")
        if len(set(ids)) != len(ids):
            raise DataError(f"{what}: repeated ids")
        return [self.pos[i] for i in ids]

    def history(self, reference: np.ndarray | None, order: Sequence[str] = ()) -> tuple[list[int], list[float]]:
        """Answered positions (posting order first, then reference order) and their answers."""
        if reference is None:
            return [], []
        r = np.asarray(reference, dtype=np.float64)
        answered = set(np.flatnonzero(np.isfinite(r)).tolist())
        asked = [self.pos[i] for i in order if i in self.pos and self.pos[i] in answered]
        asked += sorted(answered - set(asked))
        return asked, [float(r[j]) for j in asked]

    def status(self, reference: np.ndarray | None, order: Sequence[str] = (), history: Sequence[dict] = ()) -> dict:
        """Expected accuracy on the reference set with its 90% band (``width``), and the stopping rule."""
        asked, y = self.history(reference, order)
        post = self.selector.posterior(asked, y)
        return {**selector_status(self.selector, post, asked, y, len(asked), history), "post": post}

    def next(self, reference: np.ndarray | None, n: int, order: Sequence[str] = (),
             candidates: Sequence[str] | None = None, post=None) -> list[str]:
        """Ids of the next ``n`` reference prompts to ask (fewer when the pool runs out).

        ``candidates`` restricts the choice to those ids (the others count as unavailable).
        """
        asked, y = self.history(reference, order)
        blocked: list[int] = []
        if candidates is not None:
            allowed = set(self.positions(list(candidates), "candidates"))
            done = set(asked)
            blocked = [j for j in range(len(self.ids)) if j not in allowed and j not in done]
        free = len(self.ids) - len(asked) - len(blocked)
        if free <= 0:
            return []
        if post is None:
            post = self.selector.posterior(asked, y)
        # blocked prompts are passed as asked (so never picked) with the true posterior of the answers
        picks = self.selector.next(asked + blocked, y + [np.nan] * len(blocked), n=min(int(n), free), post=post)
        return [self.ids[j] for j in picks]


class OnboardingCache:
    """One :class:`ReferenceSetOnboarding` per process, built on first use (the selector's strata fit once)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._value: ReferenceSetOnboarding | None = None
        self._key = None

    def get(self, assessor, reference_ids: Sequence[str], selector_params: dict | None) -> ReferenceSetOnboarding:
        key = (id(assessor), tuple(reference_ids))
        with self._lock:
            if self._value is None or self._key != key:
                self._value = ReferenceSetOnboarding(assessor, reference_ids, selector_params)
                self._key = key
            return self._value


def selector_status(selector, post, asked: Sequence[int], y: Sequence[float], n: int,
                    history: Sequence[dict] = ()) -> dict:
    """The estimate under ``post`` (with ``n`` answered items) appended to ``history`` once per ``n``,
    and ``selector``'s stopping rule: ``{posterior, history, stop, stop_reason}``."""
    est = {k: None if v is None else float(v) for k, v in selector.estimate(post, asked=asked, answers=y).items()}
    est["n"] = n
    hist = [*history, est] if (not history or history[-1].get("n") != n) else list(history)
    stop, reason = selector.should_stop(n, hist)
    return {"posterior": est, "history": hist, "stop": bool(stop), "stop_reason": reason or None}
