"""OpenAI-compatible proxy against a real upstream: llama-cpp-python's server on loopback (slow)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "onboarding"))
from llama_server import MODEL_ALIAS, llama_cpp_missing, llama_server  # noqa: E402


@pytest.fixture(scope="module")
def upstream(tmp_path_factory):
    reason = llama_cpp_missing()
    if reason:
        pytest.skip(reason)
    with llama_server(log_path=tmp_path_factory.mktemp("llama") / "server.log") as base:
        yield base


@pytest.mark.slow
def test_router_model_forwards_to_chosen_upstream(upstream, engine, tiny):
    import openai
    from fastapi.testclient import TestClient

    from assessors.serving.app import create_app

    names = engine.registry.names()
    # only the first registered LLM has an upstream: it must be the one chosen and called
    settings = {"host": "127.0.0.1", "auth": {"enabled": False},
                "upstreams": {names[0]: {"base_url": upstream, "model": MODEL_ALIAS, "timeout_s": 120}}}
    app = create_app(settings, engine=engine)
    with TestClient(app) as c:
        # the openai client itself talks to the proxy, as a drop-in application would
        client = openai.OpenAI(base_url="http://testserver/v1", api_key="unused", http_client=c)
        raw = client.chat.completions.with_raw_response.create(
            model="router", messages=[{"role": "user", "content": "Answer yes or no: is 2 + 2 = 4?"}],
            max_tokens=4, temperature=0)
        resp = raw.parse()
        assert raw.headers["X-Router-LLM"] == names[0]
        assert resp.choices[0].message.content is not None and resp.usage.completion_tokens >= 1
        router = resp.model_extra["router"]
        assert router["llm"] == names[0] and set(router["p_success"]) == {names[0]}
