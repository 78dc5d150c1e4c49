"""``GET /health`` (no key) and ``GET /v1/reference``."""
from __future__ import annotations

import os

from fastapi import APIRouter, Depends, Request, Response

from assessors.features.sentence_transformer import encoder_precision
from assessors.serving import deps
from assessors.serving import schemas as S

router = APIRouter()


def router_info(engine) -> S.RouterInfo:
    r = engine.router
    return S.RouterInfo(policy=type(r).__name__, knob=r.knob, value=r.knob_value)


def trust_policy(engine) -> dict | None:
    """The posterior trust policy the registry applies (its ``source`` says where it came from), if any."""
    policy = getattr(engine.registry.trust_fn, "policy", None)
    return policy.settings() if policy is not None else None


def trust_target(engine) -> dict | None:
    """The prompts the posterior trust report is about (``{source, n_prompts}``), if it has a target."""
    target = getattr(engine.registry.trust_fn, "target", None)
    return dict(target) if target is not None else None


def onboarding_pool(pool) -> dict | None:
    """Where the candidate pool came from and its size (None: onboarding on the reference set)."""
    return None if pool is None else {"source": pool.source, "n_prompts": len(pool.ids)}


@router.get("/health", response_model=S.Health, response_model_exclude_none=True, tags=["meta"],
            responses={503: {"model": S.Health, "description": "starting: model loading or first encode not done"}})
async def health(request: Request, response: Response):
    """``ready`` once the model is loaded and the first encode has run; ``starting`` (503) before."""
    state = request.app.state
    queue = S.QueueInfo(pending_prompts=state.batcher.pending_prompts, **state.batcher.stats)
    if not state.ready.is_set() or state.engine is None or state.startup_error is not None:
        failed = state.startup_error is not None
        response.status_code = 503
        response.headers["Retry-After"] = "60" if failed else "1"
        return S.Health(status="failed" if failed else "starting", pid=os.getpid(), queue=queue)
    engine = state.engine
    return S.Health(status="ready", pid=os.getpid(), n_llms=len(engine.registry), n_reference=len(engine.reference_ids),
                    router=router_info(engine) if engine.router is not None else None,
                    featurizer=type(engine.model.featurizer).__name__,
                    encoder_precision=encoder_precision(engine.model.featurizer), queue=queue,
                    trust_policy=trust_policy(engine), trust_target=trust_target(engine),
                    onboarding_pool=onboarding_pool(state.pool_onboarding))


@router.get("/v1/reference", response_model=S.ReferenceSet, dependencies=[Depends(deps.require_key)], tags=["llms"])
async def reference(engine=Depends(deps.engine)):
    """The reference prompt ids a new LLM must be run on before registration."""
    return S.ReferenceSet(reference_ids=engine.reference_ids)
