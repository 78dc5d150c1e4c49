"""``/next`` and ``/answers`` over a candidate pool (``server.onboarding.pool``; see routers/onboarding.py).

With a pool configured (prompt files, or ``training``: the model's training prompts, read from the
data dir), the server reads and featurizes it once at start-up (on the encoder's thread, through the
on-disk embedding cache of ``paths.cache_dir`` when set, else :meth:`Engine.embed`), proposes
unanswered pool prompts with their text, and
registers the answers as the LLM's evidence: the registry recomputes its posterior, its trust
report and its fallback, so scoring and routing follow at once. The pool's prompts are the target of
every posterior trust report (:func:`target_trust`). Answers on reference ids are
accepted too (their features ship with the model); an LLM registered from reference results is
carried over as evidence on its answered reference prompts.
"""
from __future__ import annotations

import copy
import logging
from pathlib import Path

from assessors.core.evidence import Evidence
from assessors.onboarding.pool import PoolOnboarding, load_pool, load_training_pool
from assessors.serving import onboarding_schemas as O
from assessors.serving import schemas as S
from assessors.serving.settings import TRAINING_POOL
from assessors.trust.target import POOL_TARGET

log = logging.getLogger(__name__)

#: Where each LLM's onboarding record (estimate after each round) lives in its registry meta.
META = "onboarding"


def build(engine, settings) -> PoolOnboarding | None:
    """The pool onboarding of ``settings.onboarding.pool`` (None when unset): prompt files, or ``training``
    (the model's training prompts, read from ``settings.data_dir``). Raises at start-up
    (:class:`~assessors.errors.DataError`, :class:`~assessors.errors.ConfigError`,
    :class:`~assessors.errors.NoPosteriorError`) when unusable."""
    files = settings.onboarding.pool
    if not files:
        return None
    embed = pool_embed(engine, settings.cache_dir)
    if files == TRAINING_POOL:
        return load_training_pool(getattr(engine.model, "training_prompts", None), embed, engine.model.assessor,
                                  engine.reference_ids, settings.adaptive, settings.data_dir, settings.cache_dir)
    return load_pool(files, embed, engine.model.assessor, engine.reference_ids, settings.adaptive)


def target_trust(engine, ob: PoolOnboarding | None, max_prompts: int | None) -> int:
    """Make the pool's prompts (at most ``max_prompts`` of them, a seeded random subsample) the target of
    the registry's posterior trust report, and recompute the reports of the LLMs registered before the
    pool was ready; the number of LLMs re-reported. Nothing changes without a pool or with a trust
    report that has no target (off, custom, or the reference-set report of a non-latent assessor)."""
    retarget = getattr(engine.registry.trust_fn, "with_target", None)
    if ob is None or retarget is None:
        return 0
    fn = retarget(target=ob.X_pool, target_source=POOL_TARGET, max_target=max_prompts)
    log.info("trust report target: the candidate pool, %d of its %d prompts", fn.target["n_prompts"], len(ob.ids))
    return engine.registry.set_trust_fn(fn)


def pool_embed(engine, cache_dir: str | None):
    """How the pool is featurized at start-up: the engine's encoder, through the on-disk embedding cache
    ``<cache_dir>/embeddings`` (where train.py and predict.py keep theirs, ``paths.cache_dir``) when
    ``cache_dir`` is set and the featurizer has one. Requests never use that cache (it reloads its
    shards per call); a pool of thousands of prompts is embedded once, and a restarted server reads
    it back. A cache that cannot be read or written is skipped with a warning."""
    feat = engine.model.featurizer
    if not cache_dir or "cache_dir" not in feat.get_params():
        return engine.embed
    cached = copy.copy(feat)  # shares the loaded encoder; only this copy reads and writes the cache
    cached.set_params(cache_dir=str(Path(cache_dir) / "embeddings"))

    def embed(texts):
        try:
            return cached.transform(texts)
        except OSError as e:
            log.warning("embedding cache %s unusable (%s); embedding the pool without it", cached.cache_dir, e)
            return engine.embed(texts)

    return embed


def current(ob: PoolOnboarding, entry) -> tuple[Evidence | None, object]:
    """A registered LLM's evidence and posterior (evidence on its reference answers when it has a
    reference vector); ``(None, prior)`` for an LLM not registered (``entry`` None)."""
    if entry is None:
        return None, ob.posterior(None)
    if entry.evidence is not None:
        post = entry.posterior if entry.posterior is not None else ob.posterior(entry.evidence)
        return entry.evidence, post
    ev = ob.from_reference(entry.reference, entry.meta.get(META, {}).get("order", ()))
    return ev, ob.posterior(ev)


def next_work(ob: PoolOnboarding, entry, req: O.NextRequest):
    """``(status, ids, prompts)`` of ``POST /next`` (runs off the event loop)."""
    evidence, post = current(ob, entry)
    history = entry.meta.get(META, {}).get("history", ()) if entry is not None else ()
    status = ob.status(evidence, post, history)
    ids = ob.next(evidence, req.n, post, req.candidates)
    return status, ids, {i: ob.texts[i] for i in ids}


def answers_work(ob: PoolOnboarding, engine, name: str, req: O.AnswersRequest, old, cost):
    """Register ``name`` from its evidence with ``req.answers`` applied; ``(entry, status)``."""
    evidence = current(ob, old)[0] if old is not None else None
    history = old.meta.get(META, {}).get("history", []) if old is not None else []
    evidence = ob.update(evidence, req.answers)
    # registering validates the answers (0/1) and computes the posterior, the trust report and the fallback
    entry = engine.registry.register(name, cost=cost, source="api:answers", overwrite=True, evidence=evidence,
                                     meta={META: {"history": history}})
    status = ob.status(entry.evidence, entry.posterior, history)
    entry.meta[META]["history"] = status["history"]
    return entry, status


def new_cost(req: O.AnswersRequest) -> dict:
    """The cost model of an LLM created by ``/answers``."""
    return (req.cost or S.CostSpec()).model_dump()
