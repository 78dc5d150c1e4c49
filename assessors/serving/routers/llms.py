"""``GET/POST /v1/llms``: the LLM registry (per process; see docs/serving.md).

An LLM is registered from its results on the reference set, or (latent assessors) from evidence:
graded answers on any prompts, embedded through the scoring batcher.
"""
from __future__ import annotations

import anyio
from fastapi import APIRouter, Depends, Request

from assessors.core.evidence import Evidence, evidence_from_answers
from assessors.routing.registry import DuplicateLLMError
from assessors.serving import deps
from assessors.serving import schemas as S
from assessors.serving.batcher import QueueFull
from assessors.serving.errors import APIError, LimitError, RetryLater

router = APIRouter(prefix="/v1/llms", tags=["llms"], dependencies=[Depends(deps.require_key)])


def info(entry) -> S.LLMInfo:
    return S.LLMInfo(**entry.summary())


def check_runtime_registration(name: str, engine, settings) -> None:
    """409 with several worker processes (a registration would reach one of them); 413 when the registry is full."""
    if settings.workers > 1:
        # each worker process holds its own registry: a registration would reach one of them only
        raise APIError(f"runtime registration is off with server.workers={settings.workers} (each worker keeps its "
                       "own registry); register LLMs in the configuration (llms / known_llms) instead",
                       status=409, type="registry_per_process")
    if name not in engine.registry and len(engine.registry) >= settings.limits.max_registered:
        raise LimitError(f"the registry is full ({settings.limits.max_registered} LLMs)")


@router.get("", response_model=S.LLMList)
async def list_llms(engine=Depends(deps.engine)):
    return S.LLMList(llms=[info(e) for e in engine.registry.resolve(None)])


@router.post("", response_model=S.LLMInfo, status_code=201,
             responses={409: {"model": S.ErrorResponse, "description": "evidence needs a latent assessor"},
                        413: {"model": S.ErrorResponse, "description": "too many evidence items or too long"},
                        503: {"model": S.ErrorResponse, "description": "queue full (see Retry-After)"}})
async def register(req: S.RegisterRequest, request: Request, engine=Depends(deps.engine),
                   settings=Depends(deps.settings)):
    """Register an LLM from its reference results, or from evidence on any prompts (no retraining)."""
    check_runtime_registration(req.name, engine, settings)
    from assessors.routing.costs import CostModel

    cost = CostModel(**req.cost.model_dump())
    ref, evidence = req.reference, None
    if isinstance(ref, list):
        ref = [float("nan") if v is None else v for v in ref]
    with anyio.fail_after(settings.limits.request_timeout_s):  # embedding and the trust report may take a moment
        if req.evidence is not None:
            if req.name in engine.registry and not req.overwrite:  # 409 before embedding anything
                raise DuplicateLLMError(f"LLM {req.name!r} is already registered (pass overwrite=true to replace it)")
            evidence = await _evidence(req.evidence, request, engine, settings)
        entry = await anyio.to_thread.run_sync(
            lambda: engine.registry.register(req.name, ref, cost=cost, source="api", overwrite=req.overwrite,
                                             evidence=evidence),
            abandon_on_cancel=True)
    return info(entry)


async def _evidence(items: list[S.EvidenceItem], request: Request, engine, settings) -> Evidence:
    """The request's evidence, its prompts embedded through the scoring endpoints' batcher (off the
    event loop, in the same fair and bounded queue, with their limits)."""
    prompts = [it.prompt for it in items]
    deps.check_batch(prompts, None, settings.limits)
    try:
        fut = request.app.state.batcher.submit_embed(deps.client_id(request), prompts)
    except QueueFull as e:
        raise RetryLater(str(e), retry_after_s=e.retry_after_s) from None
    X = await fut
    return evidence_from_answers(X, [it.success for it in items])


@router.get("/{name:path}", response_model=S.LLMInfo)
async def get_llm(name: str, engine=Depends(deps.engine)):
    return info(engine.registry.get(name))
