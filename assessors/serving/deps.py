"""FastAPI dependencies: everything an endpoint needs, read from ``app.state`` (set by the factory)."""
from __future__ import annotations

import hashlib
import hmac

from fastapi import Depends, Request
from fastapi.security import APIKeyHeader, HTTPBearer

from assessors.serving.batcher import FairBatcher
from assessors.serving.errors import AuthError, LimitError, StartingError
from assessors.serving.settings import ServerSettings

_bearer = HTTPBearer(auto_error=False, description="Authorization: Bearer <API key>")
_xkey = APIKeyHeader(name="X-API-Key", auto_error=False)


def settings(request: Request) -> ServerSettings:
    return request.app.state.settings


def batcher(request: Request) -> FairBatcher:
    return request.app.state.batcher


async def engine(request: Request):
    """The loaded engine; waits for start-up (bounded by the request timeout) if still loading."""
    state = request.app.state
    if not state.loaded.is_set():
        import asyncio

        try:
            await asyncio.wait_for(state.loaded.wait(), state.settings.limits.request_timeout_s)
        except asyncio.TimeoutError:
            raise StartingError("the server is still starting (loading the model)", retry_after_s=5) from None
    if state.startup_error is not None:  # also after start-up: a given engine must not serve a failed start
        raise StartingError("the server failed to start; see its log", retry_after_s=60)
    return state.engine


def _presented_key(request: Request) -> str | None:
    key = request.headers.get("x-api-key")
    if key is None:
        scheme, _, token = (request.headers.get("authorization") or "").partition(" ")
        key = token.strip() if scheme.lower() == "bearer" else None
    return key or None


async def require_key(request: Request, _b=Depends(_bearer), _k=Depends(_xkey)) -> None:
    token = request.app.state.warmup_token  # set only while the app warms itself up in-process
    if token is not None and hmac.compare_digest(token, request.headers.get("x-api-key") or ""):
        return
    if not request.app.state.checker.check(request.headers.get("authorization"), request.headers.get("x-api-key")):
        raise AuthError("missing or invalid API key (send 'Authorization: Bearer <key>' or 'X-API-Key: <key>')")


def client_id(request: Request) -> str:
    """Fairness key: a digest of the API key (never the key itself), else the peer address."""
    key = _presented_key(request) if request.app.state.checker.enabled else None
    if key:
        return "key:" + hashlib.sha256(key.encode()).hexdigest()[:16]
    return "peer:" + (request.client.host if request.client else "unknown")


def check_batch(prompts: list[str], llms: list[str] | None, limits) -> None:
    """413 when a request exceeds the deployment's batch / prompt length / LLM-count limits."""
    if len(prompts) > limits.max_batch:
        raise LimitError(f"{len(prompts)} prompts exceed the batch limit of {limits.max_batch}")
    long = next((i for i, p in enumerate(prompts) if len(p) > limits.max_prompt_chars), None)
    if long is not None:
        raise LimitError(f"prompts[{long}] has {len(prompts[long])} characters; the limit is {limits.max_prompt_chars}")
    if llms is not None and len(llms) > limits.max_llms:
        raise LimitError(f"{len(llms)} LLMs exceed the limit of {limits.max_llms}")
