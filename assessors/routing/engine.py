"""Scoring engine: a loaded assessor + LLM registry -> P(success), costs and routes.

Shared by ``predict.py`` (score / route) and the HTTP server. Prompt embeddings are kept in
an in-memory LRU cache so repeated prompts cost only the classifier.
"""
from __future__ import annotations

import hashlib
import logging
import threading
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
from cachetools import LRUCache

from assessors.errors import ConfigError, DataError
from assessors.routing.base import Router, Routing
from assessors.routing.registry import LLMRegistry

log = logging.getLogger(__name__)


def load_assessor_model(uri: str, tracking_uri: str | None = None):
    """Load an :class:`~assessors.core.pyfunc.AssessorModel` from an MLflow model URI or directory.

    ``uri`` is a local directory holding an ``MLmodel`` file, or any MLflow model URI
    (``runs:/<id>/assessor``, ``models:/<name>/<version>``). It comes from configuration
    only; the HTTP API never takes one. ``tracking_uri`` is the MLflow store that ``runs:/``
    and ``models:/`` URIs are looked up in (what ``conf/tracking`` resolves to, the store
    ``train.py`` logs to); None leaves MLflow's own default.
    """
    import mlflow.pyfunc
    from mlflow.exceptions import MlflowException

    if not uri:
        raise ConfigError("model_uri is not set: pass model_uri=<MLflow model URI or directory of a logged assessor>")
    tracked = uri.startswith(("runs:", "models:"))
    uri = _checked_uri(uri, tracked, tracking_uri)
    try:
        loaded = mlflow.pyfunc.load_model(uri)
    except MlflowException as e:
        if not tracked:
            raise
        where = tracking_uri or mlflow.get_tracking_uri()
        raise ConfigError(f"model_uri {uri!r} not found in the MLflow store {where}: {e.message} "
                          "(pass the paths.outputs=... or tracking.tracking_uri=... that training used)") from e
    except (AttributeError, ImportError, TypeError, ValueError, EOFError) as e:
        # a model pickled by another version: a class or module it names is gone or changed
        from assessors.core.saved_model import unloadable_model_error

        raise ConfigError(unloadable_model_error(uri, _saved_format(uri), e)) from None
    model = loaded.unwrap_python_model()
    for attr in ("assessor", "featurizer", "reference_ids"):
        if not hasattr(model, attr):
            raise ConfigError(f"model_uri {uri!r} is not an assessors AssessorModel (no {attr!r})")
    return model


def _saved_format(uri: str):
    """The ``assessors_model_format`` in the MLmodel metadata of ``uri``, or None (older models, unreadable)."""
    try:
        from mlflow.models import Model
        from mlflow.tracking.artifact_utils import _download_artifact_from_uri

        path = Path(_download_artifact_from_uri(uri)) / "MLmodel"
        return (Model.load(str(path)).metadata or {}).get("assessors_model_format")
    except Exception:  # the message names the format when it can; it never fails for want of it
        return None


def _checked_uri(uri: str, tracked: bool, tracking_uri: str | None) -> str:
    """``uri`` resolved (a local model directory made absolute), with one-line errors naming the fix for a
    directory without a model or a ``runs:``/``models:`` URI whose SQLite store does not exist; points
    MLflow at ``tracking_uri``."""
    import mlflow

    local = Path(uri)
    if "://" not in uri and not tracked:
        if not (local / "MLmodel").exists():
            raise ConfigError(f"model_uri {uri!r}: no MLmodel file in that directory (expected a logged 'assessor' model)")
        return str(local.resolve())
    if tracked and tracking_uri:
        db = tracking_uri[len("sqlite:///"):] if tracking_uri.startswith("sqlite:///") else None
        if db is not None and not Path(db).exists():
            # connecting would create an empty store and then report the run as missing
            raise ConfigError(f"model_uri {uri!r}: no MLflow store at {db} (train.py logs to <paths.outputs>/mlflow.db; "
                              "pass the paths.outputs=... that training used, or tracking.tracking_uri=<server>)")
        mlflow.set_tracking_uri(tracking_uri)
    return uri


def registry_for(model, trust_fn: Callable | None = None) -> LLMRegistry:
    """An empty registry over ``model``'s reference set with its assessor's checks: reference vectors
    (``check_reference``) and evidence, described by the assessor (``describe``)."""
    assessor = model.assessor
    return LLMRegistry(model.reference_ids, trust_fn=trust_fn, check=getattr(assessor, "check_reference", None),
                       posterior_fn=assessor.describe)


class Engine:
    """P(success) and routing for registered LLMs.

    Parameters
    ----------
    model : AssessorModel
        Featurizer + fitted generic assessor + reference ids (+ known LLMs).
    registry : LLMRegistry, optional
        Defaults to an empty registry over ``model.reference_ids``.
    router : Router, optional
        Default routing policy.
    embed_cache_size : int
        Number of prompt embeddings kept in memory (0 disables).
    """

    def __init__(self, model, registry: LLMRegistry | None = None, router: Router | None = None,
                 embed_cache_size: int = 10_000, trust_fn: Callable | None = None):
        self.model = model
        self.registry = registry if registry is not None else registry_for(model, trust_fn)
        self.router = router
        if router is not None:
            router.check_params()  # a bad threshold fails at start-up, not on the first request
        self.embed_cache_size = int(embed_cache_size)
        self._cache: LRUCache = LRUCache(maxsize=max(self.embed_cache_size, 1))
        self._cache_lock = threading.Lock()
        # torch / tokenizer state is not re-entrant-safe for concurrent encodes of one model
        self._encode_lock = threading.Lock()
        feat = model.featurizer
        if "cache_dir" in feat.get_params():
            # the on-disk cache reloads every shard per call: right for batch training,
            # far too slow per request; the in-memory LRU below replaces it
            feat.set_params(cache_dir=None)

    @property
    def reference_ids(self) -> list[str]:
        return list(self.model.reference_ids)

    def register_known(self, names: Sequence[str] | None = None, cost=None, source: str = "training") -> list[str]:
        """Register LLMs whose reference results ship with the model (by name); a model that also ships their
        states from all their training answers (``known_llm_state``) scores them from those."""
        known = list(getattr(self.model, "llms", []))
        names = known if names is None else list(names)
        for n in names:
            if n not in known:
                raise DataError(f"LLM {n!r} has no reference results in the model (known: {known[:10]}...)")
            known_state = getattr(self.model, "known_llm_state", None)  # a bare model object ships none
            post = known_state(n) if known_state is not None else None
            self.registry.register(n, self.model.reference_success[known.index(n)], cost=cost, source=source,
                                   overwrite=True, posterior=post)
        return names

    # ---------------------------------------------------------------- features
    def embed(self, prompts: Sequence[str]) -> np.ndarray:
        """Prompt features (m, d), computing only prompts not in the LRU cache."""
        prompts = [str(p) for p in prompts]
        if self.embed_cache_size <= 0:
            with self._encode_lock:
                return self.model.featurizer.transform(prompts)
        keys = [hashlib.sha1(p.encode("utf-8")).hexdigest() for p in prompts]
        with self._cache_lock:
            found = {k: self._cache[k] for k in keys if k in self._cache}  # a lookup refreshes recency
        todo = list(dict.fromkeys(k for k in keys if k not in found))
        if todo:
            text = dict(zip(keys, prompts))
            with self._encode_lock:
                new = self.model.featurizer.transform([text[k] for k in todo])
            with self._cache_lock:
                for k, v in zip(todo, new):
                    found[k] = v
                    self._cache[k] = v  # evicts the least recently used beyond embed_cache_size
        return np.stack([found[k] for k in keys]).astype(np.float32, copy=False)

    # ----------------------------------------------------------------- scoring
    def predict(self, prompts: Sequence[str], llms: Sequence[str] | None = None,
                X: np.ndarray | None = None) -> tuple[list[str], np.ndarray]:
        """P(success) of shape (k, m) for registered ``llms`` (all when None)."""
        names, P, _ = self.predict_with_spread(prompts, llms, X, spread=False)
        return names, P

    def predict_with_spread(self, prompts: Sequence[str], llms: Sequence[str] | None = None,
                            X: np.ndarray | None = None, spread: bool = True):
        """``(names, P, STD)``: P(success) (k, m) and its spread (k, m).

        ``STD`` is None when the assessor gives no spread (``predict_states``) or ``spread`` is False.
        """
        entries = self.resolve(llms)
        if len(prompts) == 0:
            empty = np.zeros((len(entries), 0), np.float32)
            return [e.name for e in entries], empty, None
        X = self.embed(prompts) if X is None else X
        P, STD = self._score(X, entries)
        return [e.name for e in entries], P, (STD if spread else None)

    def resolve(self, llms: Sequence[str] | None = None) -> list:
        """Registered entries for ``llms`` (all when None); an error when none is registered."""
        entries = self.registry.resolve(llms)
        if not entries:
            raise DataError("no LLM registered: register one (POST /v1/llms, or `llms` in conf/predict.yaml)")
        return entries

    def score(self, X: np.ndarray, entries: Sequence) -> np.ndarray:
        """P(success) of shape (k, m) from features X (m, d) for resolved registry ``entries``."""
        return self._score(X, entries)[0]

    def score_with_spread(self, X: np.ndarray, entries: Sequence) -> tuple[np.ndarray, np.ndarray | None]:
        """``(P, STD)`` of shape (k, m) each; STD is None when the assessor gives no spread."""
        return self._score(X, entries)

    def _score(self, X: np.ndarray, entries: Sequence):
        """``(P, STD or None)`` through the assessor protocol: each LLM's state (from evidence or a known
        LLM's training answers, stored at registration; else from its reference results), all predicted
        in one call."""
        assessor = self.model.assessor
        states = [e.posterior for e in entries]
        ref = [i for i, s in enumerate(states) if s is None]
        if ref:
            R = self.registry.reference_matrix([entries[i] for i in ref])
            for i, s in zip(ref, assessor.describe_reference(R)):
                states[i] = s
        P, STD = assessor.predict_states(X, states)
        return self._replaced(X, entries, np.atleast_2d(P), None if STD is None else np.atleast_2d(STD))

    @staticmethod
    def _replaced(X, entries, P, STD):
        """Rows of LLMs with their own predictor (the trust fallback) scored by it; their spread is NaN."""
        own = [i for i, e in enumerate(entries) if e.predictor is not None]
        if own:
            P = np.array(P, dtype=np.float32)
            STD = None if STD is None else np.array(STD, dtype=np.float32)
            for i in own:
                P[i] = entries[i].predictor(X)
                if STD is not None:
                    STD[i] = np.nan
        return P, STD

    def decide(self, prompts: Sequence[str], names: Sequence[str], P: np.ndarray,
               router: Router | None = None) -> Routing:
        """Routing decisions from already computed P(success) (k, m) of the LLMs ``names``."""
        router = router if router is not None else self.router
        if router is None:
            raise ConfigError("no router configured")
        C = self.registry.cost_matrix(self.registry.resolve(names), prompts)
        return router.route(P, C, list(names))

    def route(self, prompts: Sequence[str], llms: Sequence[str] | None = None, router: Router | None = None) -> Routing:
        """One decision per prompt with the configured (or given) router."""
        if (router if router is not None else self.router) is None:
            raise ConfigError("no router configured")
        names, P = self.predict(prompts, llms)
        return self.decide(prompts, names, P, router)
