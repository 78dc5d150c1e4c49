"""``POST /v1/predict`` and ``POST /v1/route``: scored through the fair micro-batcher."""
from __future__ import annotations

import asyncio
from typing import Optional

from fastapi import APIRouter, Depends, Request

from assessors.serving import deps
from assessors.serving import schemas as S
from assessors.serving.batcher import QueueFull
from assessors.serving.errors import RetryLater
from assessors.serving.routers.meta import router_info

router = APIRouter(prefix="/v1", tags=["predict"], dependencies=[Depends(deps.require_key)],
                   responses={503: {"model": S.ErrorResponse, "description": "queue full (see Retry-After)"},
                              504: {"model": S.ErrorResponse, "description": "request_timeout_s exceeded"}})


async def scores(request: Request, engine, prompts: list[str], llms: Optional[list[str]]):
    """``(names, P (k, m), STD (k, m) or None)`` via the batcher, within ``request_timeout_s`` (queueing included).

    On timeout the job is cancelled: prompts not yet encoded are dropped, and the error
    handler answers 504.
    """
    settings = request.app.state.settings
    deps.check_batch(prompts, llms, settings.limits)
    entries = engine.resolve(llms)  # unknown LLM: 404 before queueing
    try:
        fut = request.app.state.batcher.submit(deps.client_id(request), prompts, entries)
    except QueueFull as e:
        raise RetryLater(str(e), retry_after_s=e.retry_after_s) from None
    return await asyncio.wait_for(fut, settings.limits.request_timeout_s)


@router.post("/predict", response_model=S.PredictResponse)
async def predict(req: S.PredictRequest, request: Request, engine=Depends(deps.engine)):
    """P(success) of every requested LLM on every prompt."""
    names, P, STD = await scores(request, engine, req.prompts, req.llms)
    own = {n: e.predictor_name for n, e in zip(names, engine.resolve(names)) if e.predictor is not None}
    return S.PredictResponse(llms=names, predictors=own or None, results=[
        S.PromptScores(p_success={n: float(P[i, j]) for i, n in enumerate(names)},
                       p_std=None if STD is None else {n: _finite(STD[i, j]) for i, n in enumerate(names)})
        for j in range(len(req.prompts))])


def _finite(x) -> float | None:
    return float(x) if x == x else None


@router.post("/route", response_model=S.RouteResponse)
async def route(req: S.RouteRequest, request: Request, engine=Depends(deps.engine)):
    """One routing decision per prompt: chosen LLM (or abstain), every P(success), expected cost."""
    names, P, _ = await scores(request, engine, req.prompts, req.llms)
    routing = engine.decide(req.prompts, names, P)
    return S.RouteResponse(router=router_info(engine), decisions=[S.Decision(**r) for r in routing.records()])
