"""Assemble a scoring engine: a loaded assessor model, its LLM registry (with trust reports) and a router."""
from __future__ import annotations

from typing import Callable, Mapping, Sequence

from assessors.core.evidence import Evidence
from assessors.data.evidence_files import read_answer_prompts, read_onboarded
from assessors.data.prompt_files import read_reference
from assessors.errors import ConfigError
from assessors.features.sentence_transformer import set_precision
from assessors.routing.engine import Engine, load_assessor_model, registry_for


def trust_hook(model, trust: Mapping | Callable | None):
    """The registry's trust-report callable (reference -> dict) for ``model``.

    ``trust`` is ``{enabled, fallback, posterior: {report and policy options}}`` (the built-in report of
    :mod:`assessors.trust`, the same for every assessor family), a custom callable (already built), or None (off).
    """
    if not trust:
        return None
    if callable(trust):
        return trust
    if "_target_" in trust:
        raise ConfigError(f"trust: a custom report ({trust['_target_']}) is built by the task that reads the config; "
                          "pass the built callable here, or run through predict.py")
    if not trust.get("enabled", True):
        return None
    from assessors.trust import make_trust_fn

    return make_trust_fn(model, fallback=trust.get("fallback", True), **(trust.get("posterior") or {}))


def build_engine(model_uri: str | None, router=None, llms: Sequence[Mapping] = (),
                 known_llms: str | Sequence[str] | None = None, default_cost: Mapping | None = None,
                 trust: Mapping | Callable | None = None,
                 embed_cache_size: int = 10_000, model=None, tracking_uri: str | None = None,
                 precision: str | None = None) -> Engine:
    """Load the assessor from ``model_uri`` (config only) and register the configured LLMs.

    ``router``: the routing policy, built (None: scoring only). ``trust``: see :func:`trust_hook`.
    ``known_llms``: training LLMs to register by name, a list or ``"all"``.

    ``llms`` entries: ``{name, cost: {...}}`` plus what describes the LLM: ``reference: path``
    (results on the reference set), ``answers: path`` with ``prompts: [files]`` or ``onboarded:
    <adaptive onboarding out_dir>`` (evidence on any prompts, latent assessors only; see
    :func:`register_evidence`), or none of them for an LLM known to the model from training.
    ``tracking_uri``: the MLflow store ``runs:/`` URIs are looked up in. ``precision``: the
    encoder arithmetic (``"float32"``, ``"bfloat16"``, ``"auto"``) for featurizers that have the
    option (sentence-transformers); None keeps the trained featurizer's.
    """
    model = model if model is not None else load_assessor_model(model_uri, tracking_uri)
    set_precision(model.featurizer, precision)
    engine = Engine(model, registry_for(model, trust_hook(model, trust)), router=router,
                    embed_cache_size=embed_cache_size)
    default_cost = dict(default_cost or {})
    known = list(getattr(model, "llms", []))
    if known_llms:
        names = known if known_llms == "all" else list(known_llms)
        engine.register_known(names, cost=default_cost)
    for spec in llms or ():
        register_spec(engine, spec, default_cost)
    return engine


def register_spec(engine: Engine, spec: Mapping, default_cost: Mapping) -> None:
    """Register one ``llms`` entry (see :func:`build_engine`)."""
    if "name" not in spec:
        raise ConfigError(f"llms entry {spec} has no 'name'")
    name, cost = spec["name"], {**default_cost, **(spec.get("cost") or {})}
    given = [k for k in ("reference", "answers", "onboarded") if spec.get(k) is not None]
    if len(given) > 1:
        raise ConfigError(f"llms entry {name!r}: give one of reference, answers (+ prompts) or onboarded, not {given}")
    if spec.get("prompts") is not None and given != ["answers"]:
        raise ConfigError(f"llms entry {name!r}: 'prompts' goes with 'answers' (the files its ids name)")
    if not given:
        engine.register_known([name], cost=cost)
    elif given == ["reference"]:
        ref = spec["reference"]
        engine.registry.register(name, read_reference(ref, name), cost=cost, source=str(ref), overwrite=True)
    else:
        register_evidence(engine, name, spec, cost)


def register_evidence(engine: Engine, name: str, spec: Mapping, cost: Mapping):
    """Register ``name`` from evidence on any prompts: ``spec["answers"]`` (``instance_id, success``)
    with ``spec["prompts"]`` (the prompt files its ids name), or ``spec["onboarded"]`` (an adaptive
    onboarding ``out_dir``: its ``answers.csv`` and the pool files recorded in ``adaptive.json``).

    The answered prompts are featurized by :meth:`Engine.embed`, as the prompts being scored are.
    The assessor describes the LLM from it (:meth:`~assessors.core.protocol.Assessor.describe`): the paper's
    generic assessor needs the reference prompts among the answered ones, else a
    :class:`~assessors.errors.NoPosteriorError` names them and ``assessor=latent``.
    """
    source = str(spec.get("answers") or spec.get("onboarded"))
    if spec.get("onboarded") is not None:
        ids, texts, y, _ = read_onboarded(spec["onboarded"])
    else:
        if spec.get("prompts") is None:
            raise ConfigError(f"llms entry {name!r}: 'answers' needs 'prompts: [files]', the prompt files whose ids "
                              "the answers name (for onboarding output: the onboard.prompts files)")
        ids, texts, y = read_answer_prompts(spec["answers"], spec["prompts"])
    evidence = Evidence(engine.embed(texts), y, tuple(ids))
    return engine.registry.register(name, cost=cost, source=source, overwrite=True, evidence=evidence)
