"""Typed API errors and their mapping to HTTP status codes (no stack traces to clients)."""
from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from assessors.errors import ConfigError, DataError, NoPosteriorError
from assessors.routing.registry import DuplicateLLMError, UnknownLLMError

log = logging.getLogger("assessors.serving")


class APIError(Exception):
    status = 400
    type = "bad_request"

    def __init__(self, message: str, status: int | None = None, type: str | None = None):
        super().__init__(message)
        self.message = message
        self.status = status or self.status
        self.type = type or self.type


class LimitError(APIError):
    status = 413
    type = "request_too_large"


class AuthError(APIError):
    status = 401
    type = "unauthorized"


class UpstreamError(APIError):
    """The upstream LLM server answered with an error, or could not be reached (502)."""

    status = 502
    type = "upstream_error"


class UpstreamTimeout(APIError):
    """The upstream LLM server did not answer within its configured timeout (504)."""

    status = 504
    type = "upstream_timeout"


class RetryLater(APIError):
    """503 with a ``Retry-After`` header: the server cannot take the request now."""

    status = 503
    type = "overloaded"

    def __init__(self, message: str, retry_after_s: int = 1, type: str | None = None):
        super().__init__(message, type=type)
        self.retry_after_s = int(retry_after_s)


class StartingError(RetryLater):
    type = "starting"


def _body(status: int, type_: str, message: str, details=None, headers: dict | None = None) -> JSONResponse:
    err = {"type": type_, "message": message}
    if details is not None:
        err["details"] = details
    if status == 401:
        headers = {**(headers or {}), "WWW-Authenticate": "Bearer"}
    return JSONResponse({"error": err}, status_code=status, headers=headers)


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(APIError)
    async def _api(_: Request, exc: APIError):
        headers = {"Retry-After": str(exc.retry_after_s)} if isinstance(exc, RetryLater) else None
        return _body(exc.status, exc.type, exc.message, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError):
        details = [{"loc": list(e.get("loc", ())), "msg": e.get("msg", ""), "type": e.get("type", "")}
                   for e in exc.errors()]
        first = details[0] if details else {"loc": [], "msg": "invalid request"}
        where = ".".join(str(p) for p in first["loc"] if p != "body") or "body"
        return _body(422, "validation_error", f"invalid request: {where}: {first['msg']}", jsonable_encoder(details))

    @app.exception_handler(UnknownLLMError)
    async def _unknown(_: Request, exc: UnknownLLMError):
        return _body(404, "unknown_llm", str(exc))

    @app.exception_handler(DuplicateLLMError)
    async def _dup(_: Request, exc: DuplicateLLMError):
        return _body(409, "conflict", str(exc))

    @app.exception_handler(NoPosteriorError)
    async def _no_posterior(_: Request, exc: NoPosteriorError):
        # a ConfigError of the model, but what the request asked for: the client can change it
        return _body(409, "no_posterior", str(exc))

    @app.exception_handler(DataError)
    async def _data(_: Request, exc: DataError):
        return _body(422, "invalid_data", str(exc))

    @app.exception_handler(TimeoutError)
    async def _timeout(_: Request, exc: TimeoutError):
        # scoring endpoints raise this when their request_timeout_s runs out (upstream calls raise UpstreamTimeout)
        return _body(504, "timeout", "the request took longer than the server's request_timeout_s")

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException):
        return _body(exc.status_code, "http_error", str(exc.detail))

    @app.exception_handler(ConfigError)
    async def _config(_: Request, exc: ConfigError):
        log.error("configuration error while serving: %s", exc)
        return _body(500, "server_misconfigured", "the server is misconfigured; see its log")

    @app.exception_handler(Exception)
    async def _internal(_: Request, exc: Exception):
        log.exception("unhandled error")  # the trace stays in the server log
        return _body(500, "internal_error", "internal server error")
