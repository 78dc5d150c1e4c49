"""The LLM registry: name -> reference results + cost model (+ trust report).

Registering an LLM only stores its success vector on the generic assessor's reference set:
the assessor conditions on that vector, so a new LLM needs no retraining.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from assessors.errors import DataError
from assessors.routing.costs import CostModel


class UnknownLLMError(KeyError):
    """An LLM name that is not registered (the HTTP API maps it to 404)."""

    def __str__(self) -> str:  # KeyError's str() adds quotes around the message
        return str(self.args[0]) if self.args else "unknown LLM"


class DuplicateLLMError(ValueError):
    """Registering a name that exists without ``overwrite`` (HTTP 409)."""


@dataclass
class RegisteredLLM:
    """One registered LLM.

    Attributes
    ----------
    name : str
    reference : ndarray of shape (n_ref,)
        Success on the reference set, float32 in [0, 1], NaN where not evaluated.
    cost : CostModel
    source : str
        Where the reference results came from (``training``, a file, ``api``).
    trust : dict or None
        Trust report computed at registration (``LLMRegistry.trust_fn``), None without one.
    predictor : callable or None
        ``predictor(X (m, d)) -> P(success) (m,)`` that replaces the assessor for this LLM (the
        fallback its trust verdict asked for), None to use the assessor.
    """

    name: str
    reference: np.ndarray
    cost: CostModel
    source: str = "api"
    trust: dict | None = None
    meta: dict = field(default_factory=dict)
    predictor: Callable[[np.ndarray], np.ndarray] | None = None

    @property
    def n_answered(self) -> int:
        return int(np.isfinite(self.reference).sum())

    @property
    def reference_accuracy(self) -> float | None:
        return float(np.nanmean(self.reference)) if self.n_answered else None

    def summary(self) -> dict[str, Any]:
        return {"name": self.name, "source": self.source, "n_reference": int(self.reference.size),
                "n_answered": self.n_answered, "reference_accuracy": self.reference_accuracy,
                "cost": self.cost.as_dict(), "trust": self.trust, "predictor": self.predictor_name}

    @property
    def predictor_name(self) -> str:
        """``assessor``, or the name of the predictor that replaces it (e.g. ``reference_only``)."""
        return "assessor" if self.predictor is None else str(getattr(self.predictor, "name", "fallback"))


def reference_vector(values: Mapping[str, float] | Sequence[float] | np.ndarray, reference_ids: Sequence[str],
                     source: str = "reference results", min_answered: int = 1) -> np.ndarray:
    """Reference results -> vector (n_ref,) in ``reference_ids`` order.

    ``values`` is either a mapping reference id -> success (ids absent = not evaluated) or a
    sequence in reference order (NaN or -1 = not evaluated). Success must be in [0, 1].
    """
    ids = list(reference_ids)
    if isinstance(values, Mapping):
        unknown = [k for k in values if k not in set(ids)]
        if unknown:
            raise DataError(f"{source}: {len(unknown)} id(s) are not reference ids of this assessor, "
                            f"e.g. {unknown[:3]} (expected ids such as {ids[:3]})")
        pos = {k: i for i, k in enumerate(ids)}
        r = np.full(len(ids), np.nan, dtype=np.float32)
        for k, v in values.items():
            r[pos[k]] = np.nan if v is None else float(v)
    else:
        r = np.asarray(values, dtype=np.float32).ravel()
        if r.size != len(ids):
            raise DataError(f"{source}: {r.size} values, expected one per reference id ({len(ids)})")
        r = np.where(r == -1, np.nan, r).astype(np.float32)
    bad = np.isfinite(r) & ((r < 0) | (r > 1))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataError(f"{source}: success must be in [0, 1] (or missing); reference id {ids[i]!r} has {r[i]}")
    if np.isfinite(r).sum() < min_answered:
        raise DataError(f"{source}: only {int(np.isfinite(r).sum())} of {len(ids)} reference items answered; "
                        f"at least {min_answered} needed")
    return r


class LLMRegistry:
    """Thread-safe name -> :class:`RegisteredLLM` store (the server registers at runtime).

    Parameters
    ----------
    reference_ids : sequence of str, length n_ref
        The assessor's reference set; every vector is stored in this order.
    trust_fn : callable or None
        ``trust_fn(reference (n_ref,)) -> dict``, called once per registration; its result is
        stored as ``RegisteredLLM.trust`` and returned with the LLM (the hook for trust reports).
        It may return ``(dict, predictor)``: a predictor that is not None replaces the assessor for
        that LLM (``RegisteredLLM.predictor``, the fallback of the posterior trust verdict).
    min_answered : int
        Fewest answered reference items accepted.
    check : callable or None
        ``check(reference (n_ref,))`` raising :class:`DataError` for vectors the assessor cannot use
        (e.g. ``LatentAssessor.check_reference``: answers must be 0/1), so they fail at registration.
    """

    def __init__(self, reference_ids: Sequence[str], trust_fn: Callable[[np.ndarray], dict] | None = None,
                 min_answered: int = 1, check: Callable[[np.ndarray], None] | None = None):
        self.reference_ids = list(reference_ids)
        self.trust_fn = trust_fn
        self.min_answered = int(min_answered)
        self.check = check
        self._llms: dict[str, RegisteredLLM] = {}
        self._lock = threading.Lock()

    def register(self, name: str, reference, cost: CostModel | Mapping | None = None, source: str = "api",
                 overwrite: bool = False, meta: dict | None = None) -> RegisteredLLM:
        """Add an LLM from its reference results (mapping id -> success, or a vector)."""
        if not isinstance(name, str) or not name.strip():
            raise DataError("LLM name must be a non-empty string")
        r = reference_vector(reference, self.reference_ids, source=f"{source} for LLM {name!r}",
                             min_answered=self.min_answered)
        if self.check is not None:
            self.check(r)
        if cost is None:
            cost = CostModel()
        elif isinstance(cost, Mapping):
            cost = CostModel(**dict(cost))
        cost.check()
        trust = self.trust_fn(r) if self.trust_fn is not None else None
        trust, predictor = trust if isinstance(trust, tuple) else (trust, None)
        if isinstance(trust, dict) and "llm" in trust:
            trust = {**trust, "llm": name}
        entry = RegisteredLLM(name=name, reference=r, cost=cost, source=source, trust=trust, meta=dict(meta or {}),
                              predictor=predictor)
        with self._lock:
            if name in self._llms and not overwrite:
                raise DuplicateLLMError(f"LLM {name!r} is already registered (pass overwrite=true to replace it)")
            # copy-on-write: readers iterate a dict that is never mutated under them
            self._llms = {**self._llms, name: entry}
        return entry

    def remove(self, name: str) -> None:
        with self._lock:
            if name not in self._llms:
                raise UnknownLLMError(f"unknown LLM {name!r}")
            self._llms = {k: v for k, v in self._llms.items() if k != name}

    def get(self, name: str) -> RegisteredLLM:
        try:
            return self._llms[name]
        except KeyError:
            raise UnknownLLMError(f"unknown LLM {name!r}; registered: {sorted(self._llms)}") from None

    def resolve(self, names: Sequence[str] | None) -> list[RegisteredLLM]:
        """Entries for ``names`` (all registered, in registration order, when None)."""
        if names is None:
            return list(self._llms.values())
        if len(set(names)) != len(names):
            raise DataError(f"duplicated LLM names in {list(names)}")
        return [self.get(n) for n in names]

    def names(self) -> list[str]:
        return list(self._llms)

    def __contains__(self, name: str) -> bool:
        return name in self._llms

    def __len__(self) -> int:
        return len(self._llms)

    @staticmethod
    def reference_matrix(entries: Sequence[RegisteredLLM]) -> np.ndarray:
        """Stacked reference vectors, shape (k, n_ref)."""
        return np.stack([e.reference for e in entries]).astype(np.float32)

    @staticmethod
    def cost_matrix(entries: Sequence[RegisteredLLM], prompts: Sequence[str]) -> np.ndarray:
        """Expected costs, shape (k, m)."""
        return np.stack([e.cost.expected(prompts) for e in entries]) if entries else np.zeros((0, len(prompts)))
