"""FastAPI app factory: ``create_app(settings, engine=None)``.

Endpoints: ``POST /v1/predict``, ``POST /v1/route`` (batched), ``GET/POST /v1/llms``,
``GET /v1/reference``, ``GET /health``, the OpenAPI spec (``/openapi.json``, ``/docs``), and an
OpenAI-compatible ``POST /v1/chat/completions`` with ``model="router"`` that routes and forwards
to the chosen LLM's configured upstream. Nothing is loaded at import time.
"""
from __future__ import annotations

import functools
import logging
import os
from typing import Callable, Optional

import anyio
from fastapi import Depends, FastAPI, Request, Response
from fastapi.security import APIKeyHeader, HTTPBearer

from assessors.routing.engine import Engine
from assessors.serving import schemas as S
from assessors.serving.auth import APIKeyChecker
from assessors.serving.errors import APIError, AuthError, LimitError, UpstreamError, install_error_handlers
from assessors.serving.limits import BodySizeLimit
from assessors.serving.settings import ServerSettings

log = logging.getLogger("assessors.serving")

ROUTER_MODEL = "router"


def create_app(settings: ServerSettings | dict | None = None, engine: Engine | None = None,
               engine_factory: Callable[[ServerSettings], Engine] | None = None) -> FastAPI:
    """Build the app.

    Parameters
    ----------
    settings : ServerSettings or dict
    engine : Engine, optional
        A ready engine (tests, or ``predict.py mode=serve`` which builds it from config).
    engine_factory : callable, optional
        ``settings -> Engine``, used when ``engine`` is None (default: load ``settings.model_uri``).
    """
    settings = ServerSettings.model_validate(settings or {})
    checker = APIKeyChecker.from_settings(settings.auth.enabled, settings.auth.api_keys_env, settings.host)
    if engine is None:
        from assessors.predict_tasks import engine_from_settings

        engine = (engine_factory or engine_from_settings)(settings)
    limits = settings.limits
    # compute runs in worker threads; cap them so a burst of connections queues instead of thrashing
    limiter = anyio.CapacityLimiter(4)
    app = FastAPI(title="assessors", version="1", description=__doc__,
                  responses={401: {"model": S.ErrorResponse}, 413: {"model": S.ErrorResponse},
                             422: {"model": S.ErrorResponse}})
    app.state.engine, app.state.settings = engine, settings
    install_error_handlers(app)
    app.add_middleware(BodySizeLimit, max_bytes=limits.max_body_bytes)
    bearer = HTTPBearer(auto_error=False, description="Authorization: Bearer <API key>")
    xkey = APIKeyHeader(name="X-API-Key", auto_error=False)

    async def require_key(request: Request, _b=Depends(bearer), _k=Depends(xkey)) -> None:
        if not checker.check(request.headers.get("authorization"), request.headers.get("x-api-key")):
            raise AuthError("missing or invalid API key (send 'Authorization: Bearer <key>' or 'X-API-Key: <key>')")

    auth = [Depends(require_key)]

    async def run(fn, *args):
        with anyio.fail_after(limits.request_timeout_s):
            return await anyio.to_thread.run_sync(functools.partial(fn, *args), abandon_on_cancel=True,
                                                  limiter=limiter)

    def check_batch(prompts: list[str], llms: Optional[list[str]]) -> None:
        if len(prompts) > limits.max_batch:
            raise LimitError(f"{len(prompts)} prompts exceed the batch limit of {limits.max_batch}")
        long = next((i for i, p in enumerate(prompts) if len(p) > limits.max_prompt_chars), None)
        if long is not None:
            raise LimitError(f"prompts[{long}] has {len(prompts[long])} characters; the limit is {limits.max_prompt_chars}")
        if llms is not None and len(llms) > limits.max_llms:
            raise LimitError(f"{len(llms)} LLMs exceed the limit of {limits.max_llms}")

    def router_info() -> S.RouterInfo:
        r = engine.router
        return S.RouterInfo(policy=type(r).__name__, knob=r.knob, value=r.knob_value)

    def info(e) -> S.LLMInfo:
        return S.LLMInfo(**e.summary())

    @app.get("/health", response_model=S.Health, tags=["meta"])
    async def health():
        return S.Health(status="ok", n_llms=len(engine.registry), n_reference=len(engine.reference_ids),
                        router=router_info(), featurizer=type(engine.model.featurizer).__name__)

    @app.get("/v1/reference", response_model=S.ReferenceSet, dependencies=auth, tags=["llms"])
    async def reference():
        """The reference prompt ids a new LLM must be run on before registration."""
        return S.ReferenceSet(reference_ids=engine.reference_ids)

    @app.get("/v1/llms", response_model=S.LLMList, dependencies=auth, tags=["llms"])
    async def list_llms():
        return S.LLMList(llms=[info(e) for e in engine.registry.resolve(None)])

    @app.post("/v1/llms", response_model=S.LLMInfo, status_code=201, dependencies=auth, tags=["llms"])
    async def register(req: S.RegisterRequest):
        """Register an LLM from its reference results (no retraining)."""
        if req.name not in engine.registry and len(engine.registry) >= limits.max_registered:
            raise LimitError(f"the registry is full ({limits.max_registered} LLMs)")
        ref = req.reference
        if isinstance(ref, list):
            ref = [float("nan") if v is None else v for v in ref]
        from assessors.routing.costs import CostModel

        entry = await run(lambda: engine.registry.register(req.name, ref, cost=CostModel(**req.cost.model_dump()),
                                                           source="api", overwrite=req.overwrite))
        return info(entry)

    @app.get("/v1/llms/{name:path}", response_model=S.LLMInfo, dependencies=auth, tags=["llms"])
    async def get_llm(name: str):
        return info(engine.registry.get(name))

    @app.post("/v1/predict", response_model=S.PredictResponse, dependencies=auth, tags=["predict"])
    async def predict(req: S.PredictRequest):
        """P(success) of every requested LLM on every prompt."""
        check_batch(req.prompts, req.llms)
        names, P, STD = await run(engine.predict_with_spread, req.prompts, req.llms)
        return S.PredictResponse(llms=names, results=[
            S.PromptScores(p_success={n: float(P[i, j]) for i, n in enumerate(names)},
                           p_std=None if STD is None else {n: float(STD[i, j]) for i, n in enumerate(names)})
            for j in range(len(req.prompts))])

    @app.post("/v1/route", response_model=S.RouteResponse, dependencies=auth, tags=["predict"])
    async def route(req: S.RouteRequest):
        """One routing decision per prompt: chosen LLM (or abstain), every P(success), expected cost."""
        check_batch(req.prompts, req.llms)
        routing = await run(engine.route, req.prompts, req.llms)
        return S.RouteResponse(router=router_info(), decisions=[S.Decision(**r) for r in routing.records()])

    clients: dict[str, object] = {}

    def upstream_client(name: str):
        if name not in clients:
            import openai

            up = settings.upstreams[name]
            key = os.environ.get(up.api_key_env, "") if up.api_key_env else ""
            clients[name] = openai.OpenAI(base_url=up.base_url, api_key=key or "not-needed",
                                          timeout=up.timeout_s, max_retries=up.max_retries)
        return clients[name]

    @app.post("/v1/chat/completions", dependencies=auth, tags=["proxy"])
    async def chat(req: S.ChatCompletionRequest, response: Response):
        """OpenAI-compatible proxy: ``model="router"`` routes the last user message, forwards the
        request to the chosen LLM's upstream and adds ``router`` (the decision) to the response."""
        if req.model != ROUTER_MODEL:
            raise APIError(f"model must be {ROUTER_MODEL!r} (this endpoint routes; call upstreams directly otherwise)",
                           status=404, type="unknown_model")
        if req.stream:
            raise APIError("stream=true is not supported by the router proxy", status=400)
        candidates = [n for n in engine.registry.names() if n in settings.upstreams]
        if not candidates:
            raise APIError("no registered LLM has an upstream configured (server.upstreams)", status=503,
                           type="no_upstream")
        text = _last_user_text(req.messages)
        check_batch([text], None)
        routing = await run(engine.route, [text], candidates)
        decision = routing.records()[0]
        if decision["llm"] is None:
            raise APIError("the router abstained: no LLM is likely enough to succeed on this prompt", status=422,
                           type="router_abstained")
        chosen = decision["llm"]
        up = settings.upstreams[chosen]
        body = req.model_dump(exclude={"model", "messages", "stream"}, exclude_none=True)
        messages = [m.model_dump(exclude_none=True) for m in req.messages]

        def call():
            import openai

            try:
                return upstream_client(chosen).chat.completions.create(model=up.model, messages=messages,
                                                                       extra_body=body or None)
            except openai.APIStatusError as e:
                raise UpstreamError(f"upstream {chosen!r} returned HTTP {e.status_code}") from None
            except openai.APIError as e:
                raise UpstreamError(f"upstream {chosen!r} failed: {type(e).__name__}") from None

        with anyio.fail_after(up.timeout_s * (up.max_retries + 1) + 5):
            out = await anyio.to_thread.run_sync(call, abandon_on_cancel=True)
        response.headers["X-Router-LLM"] = chosen
        data = out.model_dump(exclude_none=True)
        data["router"] = decision
        return data

    return app


def _last_user_text(messages) -> str:
    for m in reversed(messages):
        if m.role == "user":
            if isinstance(m.content, str):
                return m.content
            return "\n".join(str(p.get("text", "")) for p in (m.content or []) if isinstance(p, dict))
    raise APIError("messages contain no user message to route on", status=422, type="validation_error")
