"""``GET/POST /v1/llms``: the LLM registry (per process; see docs/serving.md)."""
from __future__ import annotations

import anyio
from fastapi import APIRouter, Depends

from assessors.serving import deps
from assessors.serving import schemas as S
from assessors.serving.errors import APIError, LimitError

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


@router.post("", response_model=S.LLMInfo, status_code=201)
async def register(req: S.RegisterRequest, engine=Depends(deps.engine), settings=Depends(deps.settings)):
    """Register an LLM from its reference results (no retraining)."""
    check_runtime_registration(req.name, engine, settings)
    ref = req.reference
    if isinstance(ref, list):
        ref = [float("nan") if v is None else v for v in ref]
    from assessors.routing.costs import CostModel

    cost = CostModel(**req.cost.model_dump())
    with anyio.fail_after(settings.limits.request_timeout_s):  # the trust report may take a moment
        entry = await anyio.to_thread.run_sync(
            lambda: engine.registry.register(req.name, ref, cost=cost, source="api", overwrite=req.overwrite),
            abandon_on_cancel=True)
    return info(entry)


@router.get("/{name:path}", response_model=S.LLMInfo)
async def get_llm(name: str, engine=Depends(deps.engine)):
    return info(engine.registry.get(name))
