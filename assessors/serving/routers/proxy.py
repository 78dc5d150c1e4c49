"""``POST /v1/chat/completions`` with ``model="router"``: route the last user message, then forward
the request to the chosen LLM's upstream (``server.upstreams``) with the async openai client."""
from __future__ import annotations

import os

from fastapi import APIRouter, Depends, Request, Response

from assessors.serving import deps
from assessors.serving import schemas as S
from assessors.serving.errors import APIError, UpstreamError, UpstreamTimeout
from assessors.serving.routers.scoring import scores

ROUTER_MODEL = "router"

router = APIRouter(prefix="/v1", tags=["proxy"], dependencies=[Depends(deps.require_key)],
                   responses={502: {"model": S.ErrorResponse, "description": "upstream unreachable or failed"},
                              504: {"model": S.ErrorResponse, "description": "upstream (or routing) timed out"}})


class UpstreamClients:
    """One ``openai.AsyncOpenAI`` per configured upstream, created on first use, closed at shutdown."""

    def __init__(self, upstreams: dict):
        self.upstreams = upstreams
        self._clients: dict = {}

    def get(self, name: str):
        if name not in self._clients:
            import httpx
            import openai

            up = self.upstreams[name]
            key = os.environ.get(up.api_key_env, "") if up.api_key_env else ""
            self._clients[name] = openai.AsyncOpenAI(
                base_url=up.base_url, api_key=key or "not-needed", max_retries=up.max_retries,
                timeout=httpx.Timeout(up.timeout_s, connect=up.connect_timeout_s))
        return self._clients[name]

    async def aclose(self) -> None:
        for c in self._clients.values():
            await c.close()
        self._clients.clear()


def _last_user_text(messages) -> str:
    for m in reversed(messages):
        if m.role == "user":
            if isinstance(m.content, str):
                return m.content
            return "\n".join(str(p.get("text", "")) for p in (m.content or []) if isinstance(p, dict))
    raise APIError("messages contain no user message to route on", status=422, type="validation_error")


async def call_upstream(clients: UpstreamClients, name: str, up, messages: list[dict], body: dict):
    """The upstream's completion; its failures become 502 (unreachable, error status) or 504 (timeout)."""
    import openai

    from assessors.secrets import redact_text

    url = redact_text(up.base_url)  # error bodies reach the client and the log: no key in a query string
    try:
        return await clients.get(name).chat.completions.create(model=up.model, messages=messages,
                                                                extra_body=body or None)
    except openai.APITimeoutError:
        raise UpstreamTimeout(f"upstream {name!r} ({url}) did not answer within its timeout_s={up.timeout_s} "
                              f"(connect_timeout_s={up.connect_timeout_s}, max_retries={up.max_retries})") from None
    except openai.APIConnectionError:
        raise UpstreamError(f"upstream {name!r} ({url}) is unreachable: connection failed "
                            f"(connect_timeout_s={up.connect_timeout_s}, max_retries={up.max_retries})",
                            type="upstream_unreachable") from None
    except openai.APIStatusError as e:
        raise UpstreamError(f"upstream {name!r} ({url}) returned HTTP {e.status_code}") from None
    except openai.APIError as e:
        raise UpstreamError(f"upstream {name!r} ({url}) failed: {type(e).__name__}") from None


@router.post("/chat/completions")
async def chat(req: S.ChatCompletionRequest, request: Request, response: Response, engine=Depends(deps.engine),
               settings=Depends(deps.settings)):
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
    names, P, _ = await scores(request, engine, [text], candidates)
    decision = engine.decide([text], names, P).records()[0]
    if decision["llm"] is None:
        raise APIError("the router abstained: no LLM is likely enough to succeed on this prompt", status=422,
                       type="router_abstained")
    chosen = decision["llm"]
    body = req.model_dump(exclude={"model", "messages", "stream"}, exclude_none=True)
    messages = [m.model_dump(exclude_none=True) for m in req.messages]
    out = await call_upstream(request.app.state.upstream_clients, chosen, settings.upstreams[chosen], messages, body)
    response.headers["X-Router-LLM"] = chosen
    data = out.model_dump(exclude_none=True)
    data["router"] = decision
    return data
