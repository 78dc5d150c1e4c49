"""Assemble a scoring engine: a loaded assessor model, its LLM registry (with trust reports) and a router."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from assessors.data.prompt_files import read_reference
from assessors.errors import ConfigError
from assessors.routing.engine import Engine, load_assessor_model
from assessors.routing.registry import LLMRegistry


def plain(node) -> Any:
    """A config node as plain Python containers (other values unchanged)."""
    return OmegaConf.to_container(node, resolve=True) if isinstance(node, DictConfig) or OmegaConf.is_config(node) else node


def trust_hook(model, trust: Mapping | None):
    """The registry's trust-report callable (reference -> dict) for ``model``.

    ``trust`` is ``{enabled: bool, **report options}`` (the built-in report of
    :mod:`assessors.trust`), a node with a ``_target_`` for a custom callable, or None (off).
    """
    trust = plain(trust)
    if not trust:
        return None
    if "_target_" in trust:
        return instantiate(trust)
    if not trust.get("enabled", True):
        return None
    if hasattr(model.assessor, "posterior"):  # a latent assessor: report v2, whose verdict drives the fallback
        from assessors.trust.posterior_policy import make_posterior_trust_fn

        return make_posterior_trust_fn(model, fallback=trust.get("fallback", True), **(trust.get("posterior") or {}))
    opts = {k: v for k, v in trust.items() if k not in ("enabled", "fallback", "posterior")}
    from assessors.trust.report import make_trust_fn

    return make_trust_fn(model, **opts)


def build_engine(model_uri: str | None, router: Mapping | None = None, llms: Sequence[Mapping] = (),
                 known_llms: Any = None, default_cost: Mapping | None = None, trust: Mapping | None = None,
                 embed_cache_size: int = 10_000, model=None, tracking_uri: str | None = None) -> Engine:
    """Load the assessor from ``model_uri`` (config only) and register the configured LLMs.

    ``llms`` entries: ``{name, reference: path | null, cost: {...}}``; a null reference means
    an LLM known to the model from training. ``tracking_uri``: the MLflow store ``runs:/``
    URIs are looked up in.
    """
    model = model if model is not None else load_assessor_model(model_uri, tracking_uri)
    engine = Engine(model, LLMRegistry(model.reference_ids, trust_fn=trust_hook(model, trust),
                                       check=getattr(model.assessor, "check_reference", None)),
                    router=instantiate(plain(router)) if router else None, embed_cache_size=embed_cache_size)
    default_cost = dict(plain(default_cost) or {})
    known = list(getattr(model, "llms", []))
    if known_llms:
        names = known if known_llms == "all" else list(known_llms)
        engine.register_known(names, cost=default_cost)
    for spec in map(plain, llms or ()):
        if "name" not in spec:
            raise ConfigError(f"llms entry {spec} has no 'name'")
        name, ref, cost = spec["name"], spec.get("reference"), {**default_cost, **(spec.get("cost") or {})}
        if ref is None:
            engine.register_known([name], cost=cost)
        else:
            engine.registry.register(name, read_reference(ref, name), cost=cost, source=str(ref), overwrite=True)
    return engine
