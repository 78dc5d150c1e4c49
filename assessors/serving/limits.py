"""ASGI middleware rejecting request bodies over a byte limit (413) before they are parsed."""
from __future__ import annotations

import json


class BodySizeLimit:
    """Reject bodies larger than ``max_bytes``: by ``Content-Length`` up front, else while streaming.

    Parameters
    ----------
    app : ASGI app
    max_bytes : int
    """

    def __init__(self, app, max_bytes: int):
        self.app = app
        self.max_bytes = int(max_bytes)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        for k, v in scope.get("headers", ()):
            if k == b"content-length":
                try:
                    too_big = int(v) > self.max_bytes
                except ValueError:
                    return await self._reject(send, 400, "invalid Content-Length header")
                if too_big:
                    return await self._reject(send, 413, f"request body exceeds {self.max_bytes} bytes")
        seen = 0
        started = False

        async def limited_receive():
            nonlocal seen
            msg = await receive()
            if msg["type"] == "http.request":
                seen += len(msg.get("body", b""))
                if seen > self.max_bytes:
                    raise _TooLarge()
            return msg

        async def tracking_send(msg):
            nonlocal started
            if msg["type"] == "http.response.start":
                started = True
            await send(msg)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except _TooLarge:
            if not started:
                await self._reject(send, 413, f"request body exceeds {self.max_bytes} bytes")

    @staticmethod
    async def _reject(send, status: int, message: str):
        body = json.dumps({"error": {"type": "request_too_large" if status == 413 else "bad_request",
                                     "message": message}}).encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


class _TooLarge(Exception):
    pass
