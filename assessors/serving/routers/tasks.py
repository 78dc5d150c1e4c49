"""``POST /v1/tasks/calibrate``: onboard a new task onto the served latent model.

The request holds the task's prompts and known LLMs' graded answers on some of them (the JSON form of
``predict.py mode=calibrate_task``'s files). The checks, the calibration and the logging are
:mod:`assessors.onboarding.task_onboarding`'s: the adapted model is logged to the server's MLflow
store as a new model (and version, with ``register_as``). This server keeps serving the model it
started with (its registered LLMs' posteriors and trust reports belong to it); the response says how
to serve the adapted one.

The prompts are embedded through the scoring batcher in slices (fair to the other clients); the
calibration and the logging run off the event loop, one task at a time per process.
"""
from __future__ import annotations

import asyncio

import anyio
import pandas as pd
from fastapi import APIRouter, Depends, Request

from assessors.onboarding.task_onboarding import Rows, calibrate_and_log, check_task
from assessors.serving import deps
from assessors.serving import schemas as S
from assessors.serving import task_schemas as T
from assessors.serving.batcher import QueueFull
from assessors.serving.errors import APIError, LimitError, RetryLater

router = APIRouter(prefix="/v1/tasks", tags=["tasks"], dependencies=[Depends(deps.require_key)])


def tracker(settings):
    """The MLflow store models are logged to: the one the served model was loaded from (``tracking_uri``)."""
    if not settings.tracking_uri:
        raise APIError("the server has no MLflow store to log the adapted model to (tracking_uri is unset: start it "
                       "with `predict.py mode=serve` and tracking=mlflow or tracking=server)", status=409,
                       type="no_tracking")
    from assessors.tracking import MlflowTracker

    return MlflowTracker(tracking_uri=settings.tracking_uri)


def serve_command(settings, uri: str, registered: dict | None) -> str:
    """The ``predict.py`` command that serves the adapted model."""
    model = f"models:/{registered['name']}/{registered['version']}" if registered else uri
    return f"python predict.py mode=serve model_uri={model}"


async def embed(request: Request, texts: list[str], settings):
    """Features (n, d) of ``texts`` through the batcher, in slices a client may queue at once."""
    import numpy as np

    step = max(1, min(settings.batching.client_max_prompts, settings.limits.max_batch))
    parts = []
    for i in range(0, len(texts), step):
        try:
            fut = request.app.state.batcher.submit_embed(deps.client_id(request), texts[i:i + step])
        except QueueFull as e:
            raise RetryLater(str(e), retry_after_s=e.retry_after_s) from None
        parts.append(await fut)
    return np.vstack(parts)


@router.post("/calibrate", response_model=T.CalibrateTaskResponse, status_code=201,
             responses={409: {"model": S.ErrorResponse, "description": "not a latent model, or no MLflow store"},
                        413: {"model": S.ErrorResponse, "description": "too many prompts or answers"},
                        422: {"model": S.ErrorResponse, "description": "bad prompts or answers (the rows are named)"},
                        503: {"model": S.ErrorResponse, "description": "queue full (see Retry-After)"}})
async def calibrate(req: T.CalibrateTaskRequest, request: Request, engine=Depends(deps.engine),
                    settings=Depends(deps.settings)):
    """Calibrate the served latent model to a new task from known LLMs' answers; log the adapted model."""
    lim = settings.limits
    if len(req.prompts) > lim.max_task_prompts:
        raise LimitError(f"{len(req.prompts)} prompts exceed the task limit of {lim.max_task_prompts}")
    if len(req.answers) > lim.max_task_answers:
        raise LimitError(f"{len(req.answers)} answers exceed the limit of {lim.max_task_answers}")
    long = next((i for i, p in enumerate(req.prompts) if len(p.prompt) > lim.max_prompt_chars), None)
    if long is not None:
        raise LimitError(f"prompts[{long}] has {len(req.prompts[long].prompt)} characters; the limit is "
                         f"{lim.max_prompt_chars}")
    model = engine.model
    ids, texts = [p.instance_id for p in req.prompts], [p.prompt for p in req.prompts]
    answers = pd.DataFrame([a.model_dump() for a in req.answers], columns=["llm", "instance_id", "success"])
    # refusals: DataError (422, naming the rows), NoPosteriorError (409: not a latent model)
    llm_rows, Y = check_task(model, ids, texts, answers, (Rows("prompts", 0), Rows("answers", 0)),
                             req.min_answers, require_calibrated=True)
    log_to = tracker(settings)
    X = await embed(request, texts, settings)
    st = request.app.state
    if getattr(st, "task_lock", None) is None:
        st.task_lock = asyncio.Lock()
    async with st.task_lock:  # MLflow's active run is per process: one calibration at a time
        out = await anyio.to_thread.run_sync(
            lambda: calibrate_and_log(model, ids, texts, X, llm_rows, Y, log_to, req.min_answers,
                                      source_uri=settings.model_uri, register_as=req.register_as,
                                      calibration=getattr(engine, "task_calibration", None)))
    items = out.pop("items")
    return T.CalibrateTaskResponse(**out, serve=serve_command(settings, out["model_uri"], out["registered"]),
                                   items=items.to_dict("records"))
