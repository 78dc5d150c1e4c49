"""Request limits at the ASGI level: non-finite numbers (422), chunked bodies over the limit (413),
bodies that do not arrive in time (408) and too many slow bodies from one client (429).

The real-socket versions against a uvicorn server are in ``test_server_slow.py``.
"""
from __future__ import annotations

import asyncio
import json
import time

import pytest

from assessors.serving import limits
from assessors.serving.limits import BodyLimits


def _ref(tiny):
    return [1.0] * len(tiny["reference_ids"])


@pytest.mark.parametrize("number", ["Infinity", "-Infinity", "NaN", "1e999"])
def test_non_finite_cost_is_422_naming_the_field(client, tiny, number):
    body = '{"name": "inf-cost", "reference": %s, "cost": {"per_item": %s}}' % (json.dumps(_ref(tiny)), number)
    r = client.post("/v1/llms", content=body.encode(), headers={"Content-Type": "application/json"})
    assert r.status_code == 422, r.text
    err = r.json()["error"]
    assert err["type"] == "validation_error" and "cost.per_item" in err["message"] and "finite" in err["message"]
    assert client.get("/v1/llms/inf-cost").status_code == 404  # nothing registered


def test_non_finite_reference_result_is_422_not_a_missing_answer(client, tiny):
    ref = json.dumps(_ref(tiny)).replace("1.0", "Infinity", 1)
    r = client.post("/v1/llms", content=('{"name": "inf-ref", "reference": %s}' % ref).encode(),
                    headers={"Content-Type": "application/json"})
    assert r.status_code == 422 and "reference" in r.json()["error"]["message"], r.text


def _chunks(total: int, size: int = 4096):
    sent = 0
    while sent < total:
        yield b" " * min(size, total - sent)
        sent += size


def test_chunked_body_over_the_limit_is_413(client):
    # a generator body is sent chunked, without Content-Length: the limit applies while it streams in
    prefix = b'{"prompts": ["a"]}'
    r = client.post("/v1/predict", content=iter([prefix, *_chunks(60_000)]), headers={"Content-Type": "application/json"})
    assert r.status_code == 413, r.text
    assert r.json()["error"]["type"] == "request_too_large" and "exceeds 50000 bytes" in r.json()["error"]["message"]
    assert r.headers["connection"] == "close"


def test_chunked_body_under_the_limit_is_served(client):
    r = client.post("/v1/predict", content=iter([b'{"prompts": ["a"]', *_chunks(20_000), b"}"]),
                    headers={"Content-Type": "application/json"})
    assert r.status_code == 200, r.text
    assert len(r.json()["results"]) == 1


# ------------------------------------------------------------------ timing, on the ASGI interface
def _scope(client="10.0.0.1", headers=((b"content-length", b"100"),)):
    return {"type": "http", "method": "POST", "path": "/v1/predict", "headers": list(headers),
            "client": (client, 50000)}


async def _stalled():
    await asyncio.Event().wait()  # a client that declared a body and sends nothing


def _dribble(parts, delay):
    """A receive giving ``parts`` one by one, ``delay`` seconds apart."""
    it = iter(enumerate(parts))

    async def receive():
        await asyncio.sleep(delay)
        i, part = next(it)
        return {"type": "http.request", "body": part, "more_body": i < len(parts) - 1}
    return receive


async def _call(app, scope, receive):
    """Status, headers and body of one request; the seconds it took."""
    sent, t = [], time.monotonic()
    async def send(msg):
        sent.append(msg)
    await app(scope, receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], dict(start["headers"]), json.loads(body), time.monotonic() - t


async def _echo(scope, receive, send):
    """An app answering 200 with the body it received (and how many messages that took)."""
    msgs = [await receive()]
    body = json.dumps({"body": msgs[0]["body"].decode(), "messages": len(msgs)}).encode()
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": body})


def test_body_not_arriving_in_time_is_408_and_closes(engine):
    from assessors.serving.app import create_app

    app = create_app({"auth": {"enabled": False}, "limits": {"body_timeout_s": 0.3}}, engine=engine)
    status, headers, err, took = asyncio.run(_call(app, _scope(), _stalled))
    assert status == 408 and headers[b"connection"] == b"close"
    assert err["error"]["type"] == "request_timeout" and "body_timeout_s" in err["error"]["message"]
    assert 0.3 <= took < 2.0


def test_body_arriving_slowly_within_the_timeout_reaches_the_app_whole():
    app = BodyLimits(_echo, max_bytes=1000, timeout_s=2.0)
    parts = [b'{"prompts": ', b'["a"]', b"}"]
    status, _, out, _ = asyncio.run(_call(app, _scope(), _dribble(parts, 0.05)))
    assert status == 200 and out == {"body": '{"prompts": ["a"]}', "messages": 1}


def test_a_body_dribbling_past_the_timeout_is_408():
    # each part arrives in time for a per-read timeout, the whole body does not
    app = BodyLimits(_echo, max_bytes=1000, timeout_s=0.3)
    status, _, _, took = asyncio.run(_call(app, _scope(), _dribble([b"x"] * 20, 0.05)))
    assert status == 408 and took < 1.0


def test_at_most_n_slow_bodies_per_client(monkeypatch):
    monkeypatch.setattr(limits, "SLOW_AFTER_S", 0.05)
    app = BodyLimits(_echo, max_bytes=1000, timeout_s=0.5, max_slow_per_client=2)

    async def main():
        calls = [_call(app, _scope("10.0.0.1"), _stalled) for _ in range(3)] + [_call(app, _scope("10.0.0.2"), _stalled)]
        out = await asyncio.gather(*calls)
        return out, dict(app.slow)

    out, left = asyncio.run(main())
    statuses = sorted(o[0] for o in out[:3])
    assert statuses == [408, 408, 429], statuses
    refused = next(o for o in out[:3] if o[0] == 429)
    assert refused[1][b"connection"] == b"close" and refused[3] < 0.4  # refused once slow, not at the timeout
    assert "max_slow_bodies_per_client" in refused[2]["error"]["message"]
    assert out[3][0] == 408  # another client's slow body is not refused for the first client's
    assert left == {}  # every slow body is released, refused or timed out
    # a fast body from the same client is served meanwhile and after
    assert asyncio.run(_call(app, _scope("10.0.0.1"), _dribble([b"{}"], 0)))[0] == 200


def test_disconnect_before_the_body_sends_nothing():
    app = BodyLimits(_echo, max_bytes=1000, timeout_s=1.0)
    sent = []

    async def receive():
        return {"type": "http.disconnect"}

    async def send(msg):
        sent.append(msg)

    asyncio.run(app(_scope(), receive, send))
    assert sent == []
