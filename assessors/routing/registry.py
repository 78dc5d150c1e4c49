"""The LLM registry: name -> reference results or evidence + cost model (+ trust report).

Registering an LLM stores what describes it, with no retraining: either its success vector on the
assessor's reference set (every assessor conditions on that), or its
:class:`~assessors.core.evidence.Evidence`, graded answers on any prompts, which the assessor turns
into its state of the LLM once, at registration (``describe``: a posterior for ``assessor=latent``; the
paper's generic assessor reads the reference answers out of it).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from assessors.core.evidence import Evidence
from assessors.data.names import check_unique
from assessors.errors import DataError, NoPosteriorError
from assessors.routing.costs import CostModel

#: The trust field of an LLM registered from evidence when the trust report needs reference-set answers.
TRUST_NEEDS_REFERENCE = {"available": False,
                         "reason": "this trust report needs answers on the reference set; the LLM was registered "
                                   "from evidence on other prompts (the latent assessor's posterior trust report "
                                   "works with evidence)"}


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
    reference : ndarray of shape (n_ref,) or None
        Success on the reference set, float32 in [0, 1], NaN where not evaluated; None for an LLM
        described by ``evidence``.
    cost : CostModel
    source : str
        Where the reference results came from (``training``, a file, ``api``).
    trust : dict or None
        Trust report computed at registration (``LLMRegistry.trust_fn``), None without one.
    predictor : callable or None
        ``predictor(X (m, d)) -> P(success) (m,)`` that replaces the assessor for this LLM (the
        fallback its trust verdict asked for), None to use the assessor.
    evidence : Evidence or None
        Graded answers on any prompts (instead of ``reference``).
    posterior : object or None
        The assessor's state of the LLM from ``evidence`` (``describe``), computed at registration, or a
        known LLM's state from all its training answers (shipped with the model); it is scored from it.
    """

    name: str
    reference: np.ndarray | None
    cost: CostModel
    source: str = "api"
    trust: dict | None = None
    meta: dict = field(default_factory=dict)
    predictor: Callable[[np.ndarray], np.ndarray] | None = None
    evidence: Evidence | None = None
    posterior: Any = None

    @property
    def n_answered(self) -> int:
        if self.evidence is not None:
            return self.evidence.n_answered
        return int(np.isfinite(self.reference).sum())

    @property
    def reference_accuracy(self) -> float | None:
        if self.reference is None:
            return None
        return float(np.nanmean(self.reference)) if self.n_answered else None

    def summary(self) -> dict[str, Any]:
        ev = self.evidence
        return {"name": self.name, "source": self.source,
                "n_reference": 0 if self.reference is None else int(self.reference.size),
                "n_answered": self.n_answered, "reference_accuracy": self.reference_accuracy,
                "n_evidence": None if ev is None else ev.n_items,
                "evidence_accuracy": None if ev is None else ev.accuracy,
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
    posterior_fn : callable or None
        ``posterior_fn(evidence) -> state`` (the assessor's ``describe``): LLMs may be registered from
        :class:`Evidence` only with one. A ``trust_fn`` with a true ``accepts_evidence``
        attribute is called with the :class:`Evidence` of such an LLM; any other trust report is
        replaced by :data:`TRUST_NEEDS_REFERENCE`.
    """

    def __init__(self, reference_ids: Sequence[str], trust_fn: Callable[[np.ndarray], dict] | None = None,
                 min_answered: int = 1, check: Callable[[np.ndarray], None] | None = None,
                 posterior_fn: Callable[[Evidence], Any] | None = None):
        self.reference_ids = list(reference_ids)
        self.trust_fn = trust_fn
        self.min_answered = int(min_answered)
        self.check = check
        self.posterior_fn = posterior_fn
        self._llms: dict[str, RegisteredLLM] = {}
        self._lock = threading.Lock()

    def register(self, name: str, reference=None, cost: CostModel | Mapping | None = None, source: str = "api",
                 overwrite: bool = False, meta: dict | None = None, evidence: Evidence | None = None,
                 posterior=None) -> RegisteredLLM:
        """Add an LLM from its reference results (mapping id -> success, or a vector) or its ``evidence``.

        ``posterior`` (with reference results only): the assessor's posterior of the LLM from more
        answers than its reference results (a known LLM's training answers); it is then scored from it.
        """
        if not isinstance(name, str) or not name.strip():
            raise DataError("LLM name must be a non-empty string")
        what = f"{source} for LLM {name!r}"
        if (reference is None) == (evidence is None):
            raise DataError(f"{what}: give either reference results or evidence, not {'both' if evidence else 'neither'}")
        cost = _cost_model(cost)
        if evidence is not None:
            if posterior is not None:
                raise DataError(f"{what}: a posterior goes with reference results, not with evidence")
            r, posterior = None, self._evidence_posterior(evidence, what)
        else:
            r = reference_vector(reference, self.reference_ids, source=what, min_answered=self.min_answered)
            if self.check is not None:
                self.check(r)
        trust, predictor = self._trust(name, r, evidence)
        entry = RegisteredLLM(name=name, reference=r, cost=cost, source=source, trust=trust, meta=dict(meta or {}),
                              predictor=predictor, evidence=evidence, posterior=posterior)
        with self._lock:
            if name in self._llms and not overwrite:
                raise DuplicateLLMError(f"LLM {name!r} is already registered (pass overwrite=true to replace it)")
            # copy-on-write: readers iterate a dict that is never mutated under them
            self._llms = {**self._llms, name: entry}
        return entry

    def _evidence_posterior(self, evidence: Evidence, what: str):
        """The assessor's posterior from ``evidence``; the typed errors when it cannot make one."""
        if not isinstance(evidence, Evidence):
            raise DataError(f"{what}: evidence must be an assessors.core.evidence.Evidence, got {type(evidence).__name__}")
        if self.posterior_fn is None:
            raise NoPosteriorError(f"{what}: evidence on arbitrary prompts needs an assessor with a posterior over "
                                   "abilities (train with assessor=latent); this model conditions on the reference "
                                   "set only: register the LLM by its reference results instead")
        if evidence.n_answered < self.min_answered:
            raise DataError(f"{what}: only {evidence.n_answered} of {evidence.n_items} evidence items answered; "
                            f"at least {self.min_answered} needed")
        return self.posterior_fn(evidence)

    def _trust(self, name: str, reference: np.ndarray | None, evidence: Evidence | None) -> tuple[Any, Callable | None]:
        """``(trust report, predictor or None)`` of LLM ``name`` from its reference vector or its evidence."""
        if self.trust_fn is None:
            return None, None
        trust = self._evidence_trust(evidence) if evidence is not None else self.trust_fn(reference)
        trust, predictor = trust if isinstance(trust, tuple) else (trust, None)
        if isinstance(trust, dict) and "llm" in trust:
            trust = {**trust, "llm": name}
        return trust, predictor

    def set_trust_fn(self, trust_fn: Callable | None) -> int:
        """Replace the trust hook and recompute, with it, the trust report and predictor of every LLM
        registered so far (e.g. when the server's candidate pool becomes the report's target at
        start-up); the number of LLMs re-reported. An LLM registered again meanwhile keeps its newer entry."""
        self.trust_fn = trust_fn
        old = list(self._llms.values())
        new = {id(e): replace(e, **dict(zip(("trust", "predictor"), self._trust(e.name, e.reference, e.evidence))))
               for e in old}
        with self._lock:
            self._llms = {k: new.get(id(e), e) for k, e in self._llms.items()}
        return len(new)

    def _evidence_trust(self, evidence: Evidence):
        """The trust report of an LLM registered from evidence (see ``posterior_fn``)."""
        if self.trust_fn is None:
            return None
        if getattr(self.trust_fn, "accepts_evidence", False):
            return self.trust_fn(evidence)
        return dict(TRUST_NEEDS_REFERENCE)

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
        check_unique(names, "llms", what="LLM name")
        return [self.get(n) for n in names]

    def names(self) -> list[str]:
        return list(self._llms)

    def __contains__(self, name: str) -> bool:
        return name in self._llms

    def __len__(self) -> int:
        return len(self._llms)

    @staticmethod
    def reference_matrix(entries: Sequence[RegisteredLLM]) -> np.ndarray:
        """Stacked reference vectors, shape (k, n_ref) (entries registered from evidence have none)."""
        bad = [e.name for e in entries if e.reference is None]
        if bad:
            raise DataError(f"LLMs {bad} are described by evidence, not reference results; score them through their "
                            "posterior (Engine.score)")
        return np.stack([e.reference for e in entries]).astype(np.float32)

    @staticmethod
    def cost_matrix(entries: Sequence[RegisteredLLM], prompts: Sequence[str]) -> np.ndarray:
        """Expected costs, shape (k, m)."""
        return np.stack([e.cost.expected(prompts) for e in entries]) if entries else np.zeros((0, len(prompts)))


def _cost_model(cost: CostModel | Mapping | None) -> CostModel:
    """A checked :class:`CostModel` from one, a mapping of its parameters, or None (free)."""
    if cost is None:
        cost = CostModel()
    elif isinstance(cost, Mapping):
        cost = CostModel(**dict(cost))
    cost.check()
    return cost
