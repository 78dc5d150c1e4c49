"""Adaptive onboarding and the trust report of a registered LLM.

* ``POST /v1/llms/{name}/next``: the next reference prompts to ask, chosen under the LLM's current
  posterior (assessors with one, ``assessor=latent``); with ``server.onboarding.pool`` set, the next
  prompts of that candidate pool, with their text (``serving/pool_onboarding.py``);
* ``POST /v1/llms/{name}/answers``: graded answers on reference prompts; they update the LLM's
  reference vector (so its posterior, its predictions and its trust report) at once; with a pool,
  answers on pool (or reference) prompts update the LLM's evidence;
* ``GET /v1/llms/{name}/trust``: the trust report computed at the last registration or answer,
  with the predictor in use (the reference-only fallback when the verdict says "out of population").

Registry semantics are those of ``POST /v1/llms`` (per process; refused with several workers).
"""
from __future__ import annotations

import anyio
import numpy as np
from fastapi import APIRouter, Depends, Request

from assessors.errors import NoPosteriorError
from assessors.onboarding.reference_set import OnboardingCache
from assessors.serving import deps
from assessors.serving import onboarding_schemas as O
from assessors.serving import pool_onboarding as pool
from assessors.serving import schemas as S
from assessors.serving.errors import APIError
from assessors.serving.routers.llms import check_runtime_registration, info

router = APIRouter(prefix="/v1/llms", tags=["onboarding"], dependencies=[Depends(deps.require_key)],
                   responses={404: {"model": S.ErrorResponse, "description": "unknown LLM"},
                              409: {"model": S.ErrorResponse, "description": "the assessor has no posterior"}})

#: Where each LLM's onboarding record (answer order, estimate after each round) lives in its registry meta.
META = pool.META


def _onboarding(request: Request, engine):
    st = request.app.state
    if not hasattr(st, "onboarding_cache"):
        st.onboarding_cache = OnboardingCache()
    try:
        return st.onboarding_cache.get(engine.model.assessor, engine.reference_ids, st.settings.adaptive)
    except NoPosteriorError as e:
        raise APIError(str(e), status=409, type="no_posterior") from None


def _posterior(status: dict, estimator: str = "model") -> O.PosteriorInfo:
    p = status["posterior"]
    return O.PosteriorInfo(expected_accuracy=p["accuracy"], low=p["low"], high=p["high"], width=p["width"],
                           n_answered=p["n"], estimator=estimator, model_accuracy=p.get("model_accuracy"),
                           design_accuracy=p.get("design_accuracy"), design_low=p.get("design_low"),
                           design_high=p.get("design_high"), n_random=int(p.get("n_random") or 0))


def _reference_entry(engine, name: str):
    """The registered LLM ``name``; 409 when it is described by evidence (these endpoints work on reference answers)."""
    entry = engine.registry.get(name)
    if entry.reference is None:
        raise APIError(f"LLM {name!r} was registered from evidence on arbitrary prompts; /next and /answers work on "
                       "reference-set answers. Register it again (POST /v1/llms, overwrite=true) with all its evidence, "
                       "or under another name from reference answers, or serve a candidate pool "
                       "(server.onboarding.pool), whose answers describe LLMs by evidence",
                       status=409, type="registered_from_evidence")
    return entry


async def _in_thread(fn, settings):
    with anyio.fail_after(settings.limits.request_timeout_s):
        return await anyio.to_thread.run_sync(fn, abandon_on_cancel=True)


@router.post("/{name:path}/next", response_model=O.NextResponse)
async def next_prompts(name: str, req: O.NextRequest, request: Request, engine=Depends(deps.engine),
                       settings=Depends(deps.settings)):
    """The next reference (or candidate pool) prompts to ask this LLM, most informative first, and whether to stop."""
    if request.app.state.pool_onboarding is not None:
        return await _pool_next(name, req, request.app.state.pool_onboarding, engine, settings)
    ob = _onboarding(request, engine)
    if name in engine.registry or not req.start:
        entry = _reference_entry(engine, name)  # unknown LLM: 404 (pass start=true for a new one)
        ref, meta = entry.reference, entry.meta.get(META, {})
    else:
        ref, meta = None, {}

    def work():
        status = ob.status(ref, meta.get("order", ()), meta.get("history", ()))
        ids = ob.next(ref, req.n, meta.get("order", ()), req.candidates, post=status["post"])
        return status, ids

    status, ids = await _in_thread(work, settings)
    return O.NextResponse(llm=name, ids=ids, posterior=_posterior(status, ob.selector.estimator),
                          stop=O.StopInfo(met=status["stop"], reason=status["stop_reason"]))


@router.post("/{name:path}/answers", response_model=O.AnswersResponse)
async def post_answers(name: str, req: O.AnswersRequest, request: Request, engine=Depends(deps.engine),
                       settings=Depends(deps.settings)):
    """Add graded answers (reference or pool id -> 0/1) to the LLM: its posterior, predictions and trust report follow."""
    if request.app.state.pool_onboarding is not None:
        check_runtime_registration(name, engine, settings)
        return await _pool_answers(name, req, request.app.state.pool_onboarding, engine, settings)
    ob = _onboarding(request, engine)
    check_runtime_registration(name, engine, settings)
    if name in engine.registry:
        old = _reference_entry(engine, name)
        ref, meta, cost = old.reference.astype(np.float64), old.meta.get(META, {}), old.cost
    elif req.create:
        ref, meta = np.full(len(engine.reference_ids), np.nan), {}
        cost = pool.new_cost(req)
    else:
        engine.registry.get(name)  # 404, naming the registered LLMs
    ids = list(req.answers)
    pos = ob.positions(ids, "answers")
    for j, i in zip(pos, ids):
        v = req.answers[i]
        ref[j] = np.nan if v is None else float(v)
    order = [i for i in meta.get("order", []) if i not in req.answers] + [i for i in ids if req.answers[i] is not None]

    def work():
        # registering validates the answers (0/1) and computes the trust report and the fallback
        entry = engine.registry.register(name, ref, cost=cost, source="api:answers", overwrite=True,
                                         meta={META: {"order": order, "history": meta.get("history", [])}})
        status = ob.status(entry.reference, order, meta.get("history", []))
        entry.meta[META]["history"] = status["history"]
        return entry, status

    entry, status = await _in_thread(work, settings)
    return O.AnswersResponse(llm=info(entry), posterior=_posterior(status, ob.selector.estimator),
                             stop=O.StopInfo(met=status["stop"], reason=status["stop_reason"]))


async def _pool_next(name: str, req: O.NextRequest, ob, engine, settings) -> O.NextResponse:
    """``/next`` over the candidate pool: unanswered pool prompts and their text."""
    entry = engine.registry.get(name) if (name in engine.registry or not req.start) else None  # 404 without start
    status, ids, prompts = await _in_thread(lambda: pool.next_work(ob, entry, req), settings)
    return O.NextResponse(llm=name, ids=ids, prompts=prompts, posterior=_posterior(status, ob.selector.estimator),
                          stop=O.StopInfo(met=status["stop"], reason=status["stop_reason"]))


async def _pool_answers(name: str, req: O.AnswersRequest, ob, engine, settings) -> O.AnswersResponse:
    """``/answers`` over the candidate pool: the answers become (part of) the LLM's evidence."""
    old = engine.registry.get(name) if (name in engine.registry or not req.create) else None  # 404 without create
    cost = old.cost if old is not None else pool.new_cost(req)
    entry, status = await _in_thread(lambda: pool.answers_work(ob, engine, name, req, old, cost), settings)
    return O.AnswersResponse(llm=info(entry), posterior=_posterior(status, ob.selector.estimator),
                             stop=O.StopInfo(met=status["stop"], reason=status["stop_reason"]))


@router.get("/{name:path}/trust", response_model=O.TrustResponse)
async def trust(name: str, engine=Depends(deps.engine)):
    """The LLM's trust report and the predictor its verdict chose."""
    entry = engine.registry.get(name)
    if entry.trust is None:
        raise APIError(f"no trust report for {name!r}: the server runs with trust reports off (trust.enabled=false)",
                       status=409, type="no_trust_report")
    return O.TrustResponse(llm=name, predictor=entry.predictor_name, trust=entry.trust)
