"""FastAPI app factory: ``create_app(settings, engine=None)``.

Endpoints: ``POST /v1/predict``, ``POST /v1/route`` (batched), ``GET/POST /v1/llms``,
``POST /v1/llms/{name}/next`` and ``/answers`` (adaptive onboarding), ``GET /v1/llms/{name}/trust``,
``GET /v1/reference``, ``POST /v1/tasks/calibrate`` (task onboarding), ``GET /health``, the OpenAPI
spec (``/openapi.json``, ``/docs``), and an OpenAI-compatible ``POST /v1/chat/completions`` with
``model="router"`` that routes and forwards to the chosen LLM's configured upstream.
Nothing is loaded at import time.

At start-up (the lifespan) the model is loaded, when not given, and the whole scoring path runs
once on a warm-up prompt; ``/health`` answers ``starting`` (503) until then and ``ready`` after.
Scoring requests go through a fair micro-batcher (``serving/batcher.py``) whose single worker
thread owns the encoder.
"""
from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import os
from typing import Callable

from fastapi import FastAPI

from assessors.routing.engine import Engine
from assessors.serving import pool_onboarding
from assessors.serving import schemas as S
from assessors.serving.auth import APIKeyChecker
from assessors.serving.batcher import FairBatcher
from assessors.serving.errors import install_error_handlers
from assessors.serving.limits import BodyLimits
from assessors.serving.routers import llms, meta, onboarding, proxy, scoring, tasks
from assessors.serving.settings import ServerSettings

log = logging.getLogger("assessors.serving")

#: Environment variable carrying the settings (JSON) to each uvicorn worker process.
SETTINGS_ENV = "ASSESSORS_SERVER_SETTINGS"
WARMUP_PROMPT = "Warm-up prompt: is this router ready to score requests?"


def warm_up(engine: Engine) -> None:
    """Run the whole scoring path once (encoder load, first encode, classifier, router), after the
    featurizer's own warm-up (a bfloat16 encoder prepares its kernels for every input shape)."""
    engine.embed([WARMUP_PROMPT])
    engine.model.featurizer.warm_up()
    if len(engine.registry):
        entries = engine.resolve(None)
        P = engine.score(engine.embed([WARMUP_PROMPT]), entries)
        if engine.router is not None:
            engine.decide([WARMUP_PROMPT], [e.name for e in entries], P)


def create_app(settings: ServerSettings | dict | None = None, engine: Engine | None = None,
               engine_factory: Callable[[ServerSettings], Engine] | None = None) -> FastAPI:
    """Build the app: its state, the error handlers, the request-body limits and the routers.

    Parameters
    ----------
    settings : ServerSettings or dict
    engine : Engine, optional
        A ready engine (tests, or ``predict.py mode=serve`` which builds it from config).
    engine_factory : callable, optional
        ``settings -> Engine``, called at start-up when ``engine`` is None (default: load
        ``settings.model_uri`` and register the configured LLMs).
    """
    settings = ServerSettings.model_validate(settings or {})
    checker = APIKeyChecker.from_settings(settings.auth.enabled, settings.auth.api_keys_env, settings.host)
    app = FastAPI(title="assessors", version="1", description=__doc__, lifespan=lifespan,
                  responses={401: {"model": S.ErrorResponse}, 408: {"model": S.ErrorResponse},
                             413: {"model": S.ErrorResponse}, 422: {"model": S.ErrorResponse},
                             429: {"model": S.ErrorResponse}})
    init_state(app.state, settings, checker, engine, engine_factory)
    install_error_handlers(app)
    lim = settings.limits
    app.add_middleware(BodyLimits, max_bytes=lim.max_body_bytes, timeout_s=lim.body_timeout_s,
                       max_slow_per_client=lim.max_slow_bodies_per_client)
    # onboarding before llms: its /v1/llms/{name}/trust must not match GET /v1/llms/{name:path}
    for r in (meta.router, onboarding.router, llms.router, scoring.router, tasks.router, proxy.router):
        app.include_router(r)
    return app


def init_state(st, settings: ServerSettings, checker: APIKeyChecker, engine: Engine | None,
               engine_factory: Callable[[ServerSettings], Engine] | None) -> None:
    """Everything the dependencies (``serving/deps.py``) and the lifespan read from ``app.state``."""
    st.settings, st.checker, st.engine, st.engine_factory = settings, checker, engine, engine_factory
    st.loaded, st.ready, st.startup_error, st.warmup_token = asyncio.Event(), asyncio.Event(), None, None
    b = settings.batching
    # the engine is looked up at call time: it may be loaded at start-up, and tests patch its methods
    st.batcher = FairBatcher(functools.partial(_embed, st), functools.partial(_score, st),
                             window_ms=b.window_ms, max_prompts=b.max_prompts, quantum=b.quantum,
                             queue_max_prompts=b.queue_max_prompts, client_max_prompts=b.client_max_prompts,
                             batch_ms=b.batch_ms, trim_s=b.trim_s)
    st.upstream_clients = proxy.UpstreamClients(settings.upstreams)
    st.pool_onboarding = None  # server.onboarding.pool, read and featurized at start-up


def _embed(st, prompts: list[str]):
    """The batcher's encode step, on the engine current in ``st`` (loaded at start-up or given)."""
    return st.engine.embed(prompts)


def _score(st, X, entries):
    """The batcher's scoring step, on the engine current in ``st``."""
    return st.engine.score_with_spread(X, entries)


@contextlib.asynccontextmanager
async def lifespan(app: FastAPI):
    """Start the batcher and, in the background, load and warm up the engine; stop both at shutdown."""
    st = app.state
    # events bound to this server's loop
    st.loaded, st.ready, st.startup_error = asyncio.Event(), asyncio.Event(), None
    st.batcher.start()
    task = asyncio.get_running_loop().create_task(_start(app, st.engine_factory))
    try:
        yield
    finally:
        task.cancel()
        await st.batcher.stop()
        await st.upstream_clients.aclose()


async def _start(app: FastAPI, engine_factory) -> None:
    """Load the engine (if not given) and warm it up on the encoder thread; then mark ready."""
    st = app.state
    try:
        if st.engine is None:
            if engine_factory is None:
                from assessors.serving.engine import engine_from_settings as engine_factory
            st.engine = await st.batcher.run_in_worker(engine_factory, st.settings)
        await st.batcher.run_in_worker(warm_up, st.engine)
        # the candidate pool is featurized once, on the encoder's thread (an unusable pool fails start-up)
        st.pool_onboarding = await st.batcher.run_in_worker(pool_onboarding.build, st.engine, st.settings)
        # with a pool, its prompts are the trust report's target (LLMs registered before are re-reported)
        await st.batcher.run_in_worker(pool_onboarding.target_trust, st.engine, st.pool_onboarding,
                                       st.settings.onboarding.trust_target_max)
        st.loaded.set()  # requests may use the engine from now on (the route warm-up below does)
        await _warm_routes(app)
        log.info("ready: %d LLMs, featurizer %s (pid %d)", len(st.engine.registry),
                 type(st.engine.model.featurizer).__name__, os.getpid())
    except asyncio.CancelledError:
        raise
    except Exception as e:  # noqa: BLE001 - reported by /health and every request, details in the log
        log.exception("start-up failed")
        st.startup_error = e
    st.loaded.set()
    st.ready.set()


async def _warm_routes(app: FastAPI) -> None:
    """Send in-process requests through the whole stack: FastAPI builds its per-route models and
    endpoint metadata lazily, which cost the first real request tens of milliseconds otherwise.

    They authenticate with a random token that exists only in this process's memory and is
    discarded right after.
    """
    import secrets

    import httpx

    st = app.state
    st.warmup_token = secrets.token_urlsafe(32)
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://warm-up",
                                     headers={"X-API-Key": st.warmup_token}) as c:
            await c.get("/v1/llms")
            if len(st.engine.registry):
                await c.post("/v1/predict", json={"prompts": [WARMUP_PROMPT]})
                if st.engine.router is not None:
                    await c.post("/v1/route", json={"prompts": [WARMUP_PROMPT]})
            await c.get("/-/warm-up")  # a path no route has: matching it visits every route
    finally:
        st.warmup_token = None


def app_from_env(engine_factory: Callable[[ServerSettings], Engine] | None = None) -> FastAPI:
    """App of one uvicorn worker process, from the settings in ``$ASSESSORS_SERVER_SETTINGS``.

    Each worker builds its own engine: the model, the LLMs configured there, and a registry of its
    own (``engine_factory``, as in :func:`create_app`). ``predict.py mode=serve`` starts the workers
    with ``uvicorn --factory assessors.tasks.serve:app_from_env``, which passes a factory that builds
    the configured router.
    """
    raw = os.environ.get(SETTINGS_ENV)
    if not raw:
        from assessors.errors import ConfigError

        raise ConfigError(f"{SETTINGS_ENV} is not set: start workers through `predict.py mode=serve server.workers=N`")
    return create_app(json.loads(raw), engine_factory=engine_factory)
