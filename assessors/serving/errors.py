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
    """An error the client caused or can act on: its HTTP ``status`` and a machine-readable ``type``.

    Subclasses set both in the class statement: ``class LimitError(APIError, status=413, type="...")``.
    """

    status = 400
    type = "bad_request"

    def __init_subclass__(cls, status: int | None = None, type: str | None = None, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.status = status or cls.status
        cls.type = type or cls.type

    def __init__(self, message: str, status: int | None = None, type: str | None = None):
        super().__init__(message)
        self.message = message
        self.status = status or self.status
        self.type = type or self.type


class LimitError(APIError, status=413, type="request_too_large"):
    """The request is larger than the server's limits (413)."""


class AuthError(APIError, status=401, type="unauthorized"):
    """No or a wrong API key (401)."""


class UpstreamError(APIError, status=502, type="upstream_error"):
    """The upstream LLM server answered with an error, or could not be reached (502)."""


class UpstreamTimeout(APIError, status=504, type="upstream_timeout"):
    """The upstream LLM server did not answer within its configured timeout (504)."""


class RetryLater(APIError, status=503, type="overloaded"):
    """503 with a ``Retry-After`` header: the server cannot take the request now."""

    def __init__(self, message: str, retry_after_s: int = 1, type: str | None = None):
        super().__init__(message, type=type)
        self.retry_after_s = int(retry_after_s)


class StartingError(RetryLater, type="starting"):
    """The server is still loading its model (503)."""


#: Errors raised below the serving layer that a client can act on: class -> (HTTP status, type).
#: NoPosteriorError is a ConfigError of the model, but what the request asked for: the client can
#: change it (handlers are looked up along the class's MRO, so it wins over ConfigError).
CLIENT_ERRORS: dict[type, tuple[int, str]] = {
    UnknownLLMError: (404, "unknown_llm"),
    DuplicateLLMError: (409, "conflict"),
    NoPosteriorError: (409, "no_posterior"),
    DataError: (422, "invalid_data"),
}


def _body(status: int, type_: str, message: str, details=None, headers: dict | None = None) -> JSONResponse:
    err = {"type": type_, "message": message}
    if details is not None:
        err["details"] = details
    if status == 401:
        headers = {**(headers or {}), "WWW-Authenticate": "Bearer"}
    return JSONResponse({"error": err}, status_code=status, headers=headers)


def _client_error(status: int, type_: str):
    """A handler answering ``status`` with the error's message as a ``type_`` error."""
    async def handler(_: Request, exc: Exception):
        return _body(status, type_, str(exc))
    return handler


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

    for exc_class, (status, type_) in CLIENT_ERRORS.items():
        app.add_exception_handler(exc_class, _client_error(status, type_))

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
