"""ASGI middleware bounding request bodies before anything parses them.

A body larger than the limit is a 413 (by ``Content-Length`` up front, else while a chunked body
streams in); a body that has not fully arrived ``timeout_s`` after the request's headers is a 408;
a client (by IP address) with ``max_slow_per_client`` bodies already arriving for longer than
:data:`SLOW_AFTER_S` gets a 429 for the next. Each of these answers closes the connection, so a
client that declares a body and never sends it holds a connection for ``timeout_s`` at most.

The body is read here in full and handed to the app in one message: FastAPI turns any error
raised while it reads a body into a 400, so the limits must be enforced before it reads.
"""
from __future__ import annotations

import asyncio
import json

#: A body still arriving after this many seconds counts as slow (per-client limit). Small
#: JSON bodies arrive with their headers; the 1 MB default limit takes 1 s at 8 Mbit/s.
SLOW_AFTER_S = 1.0


class BodyLimits:
    """Reject request bodies that are too large (413), too late (408), or one slow body too many (429).

    Parameters
    ----------
    app : ASGI app
    max_bytes : int
        Largest body accepted.
    timeout_s : float
        Time from the request's headers by which its whole body must have arrived.
    max_slow_per_client : int
        Bodies of one client address that may be arriving for longer than :data:`SLOW_AFTER_S`
        at once (clients behind one proxy share an address).
    """

    def __init__(self, app, max_bytes: int, timeout_s: float = 10.0, max_slow_per_client: int = 4):
        self.app = app
        self.max_bytes = int(max_bytes)
        self.timeout_s = float(timeout_s)
        self.max_slow_per_client = int(max_slow_per_client)
        self.slow: dict[str, int] = {}  # client address -> its bodies arriving for longer than SLOW_AFTER_S

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        for k, v in scope.get("headers", ()):
            if k == b"content-length":
                try:
                    too_big = int(v) > self.max_bytes
                except ValueError:
                    return await _reject(send, _Rejected(400, "bad_request", "invalid Content-Length header"))
                if too_big:
                    return await _reject(send, self._too_large())
        client = (scope.get("client") or ("unknown",))[0]
        try:
            body = await self._read(receive, client)
        except _Rejected as r:
            return await _reject(send, r)
        if body is None:  # the client went away before sending its body: nobody to answer
            return None
        return await self.app(scope, _replay(body, receive), send)

    async def _read(self, receive, client: str) -> bytes | None:
        """The whole body, or None when the client disconnected; raises :class:`_Rejected`."""
        loop = asyncio.get_running_loop()
        start = loop.time()
        chunks, size, slow = [], 0, False
        try:
            while True:
                msg = None
                nxt = asyncio.ensure_future(receive())
                try:
                    while msg is None:
                        if not slow and loop.time() - start >= min(SLOW_AFTER_S, self.timeout_s):
                            self._count_slow(client)
                            slow = True
                        until = start + (self.timeout_s if slow else min(SLOW_AFTER_S, self.timeout_s))
                        done, _ = await asyncio.wait({nxt}, timeout=max(0.0, until - loop.time()))
                        if done:
                            msg = nxt.result()
                        elif slow and loop.time() - start >= self.timeout_s:
                            raise _Rejected(408, "request_timeout", f"the request body did not arrive within "
                                            f"{self.timeout_s:g} s (server.limits.body_timeout_s); send it at once")
                finally:
                    nxt.cancel()  # a no-op once done
                if msg["type"] == "http.disconnect":
                    return None
                size += len(msg.get("body", b""))
                if size > self.max_bytes:
                    raise self._too_large()
                chunks.append(msg.get("body", b""))
                if not msg.get("more_body", False):
                    return b"".join(chunks)
        finally:
            if slow:
                self.slow[client] -= 1
                if not self.slow[client]:
                    del self.slow[client]

    def _count_slow(self, client: str) -> None:
        if self.slow.get(client, 0) >= self.max_slow_per_client:
            raise _Rejected(429, "too_many_slow_bodies",
                            f"{self.max_slow_per_client} request bodies from {client} are still arriving "
                            "(server.limits.max_slow_bodies_per_client); send each body at once")
        self.slow[client] = self.slow.get(client, 0) + 1

    def _too_large(self) -> "_Rejected":
        return _Rejected(413, "request_too_large", f"request body exceeds {self.max_bytes} bytes")


def _replay(body: bytes, receive):
    """An ASGI ``receive`` that gives the app the whole body first, then the server's messages
    (a disconnect, which streaming responses listen for)."""
    sent = False

    async def replay():
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


class _Rejected(Exception):
    def __init__(self, status: int, type_: str, message: str):
        super().__init__(message)
        self.status, self.type, self.message = status, type_, message


async def _reject(send, r: _Rejected) -> None:
    """The error body every endpoint uses; ``Connection: close`` because the request's body (or
    the rest of it) was never read."""
    body = json.dumps({"error": {"type": r.type, "message": r.message}}).encode()
    await send({"type": "http.response.start", "status": r.status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})
