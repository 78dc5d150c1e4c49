"""A real uvicorn server (``predict.py mode=serve``) on loopback: warm start, queue-full 503,
cancellation on timeout, several workers, request-body limits on raw sockets (slow)."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from tiny_assessor import fit_tiny

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "onboarding"))
from llama_server import free_port  # noqa: E402

pytestmark = pytest.mark.slow


def save(model, path):
    import mlflow.pyfunc

    from assessors.core.pyfunc import PIP_REQUIREMENTS

    mlflow.pyfunc.save_model(str(path), python_model=model, pip_requirements=PIP_REQUIREMENTS)
    return path


@pytest.fixture(scope="module")
def unigram_model(data_dir, tmp_path_factory):
    tiny = fit_tiny(data_dir)
    return tiny, save(tiny["model"], tmp_path_factory.mktemp("m") / "assessor")


@pytest.fixture(scope="module")
def minilm_model(data_dir, shared_cache, tmp_path_factory):
    """The tiny assessor on MiniLM features: a real encoder slow enough to fill a queue."""
    from assessors.features.sentence_transformer import SentenceTransformerFeaturizer

    tiny = fit_tiny(data_dir, SentenceTransformerFeaturizer(cache_dir=str(shared_cache / "embeddings"), show_progress=False))
    return tiny, save(tiny["model"], tmp_path_factory.mktemp("m") / "assessor")


class Server:
    def __init__(self, model, tmp: Path, overrides=()):
        tiny, path = model
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = tmp / "server.log"
        llms = ",".join(tiny["train_llms"][:3])
        cmd = [sys.executable, str(ROOT / "predict.py"), "mode=serve", f"model_uri={path}", f"known_llms=[{llms}]",
               "server.auth.enabled=false", f"server.port={self.port}", "trust.enabled=false",
               f"hydra.run.dir={tmp / 'run'}", *overrides]
        with open(self.log, "wb") as fh:
            self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT,
                                         env={**os.environ, "HF_HUB_OFFLINE": "1"})

    def health_until_ready(self, timeout=900.0) -> list[str]:
        """Statuses seen by polling /health from the moment the port answers until ``ready``."""
        seen, deadline = [], time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.log.read_text()[-3000:]
            try:
                r = httpx.get(self.base + "/health", timeout=5)
            except httpx.TransportError:
                time.sleep(0.02)
                continue
            status = r.json()["status"]
            assert (r.status_code, status) in {(503, "starting"), (200, "ready")}
            seen.append(status)
            if status == "ready":
                return seen
            time.sleep(0.02)
        raise AssertionError("server not ready in time:\n" + self.log.read_text()[-3000:])

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()


@pytest.fixture
def server(tmp_path):
    started = []

    def start(model, *overrides):
        s = Server(model, tmp_path, overrides)
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()


def long_prompts(tiny, n, chars):
    """``n`` distinct prompts of ``chars`` characters of real prompt text each."""
    text = " ".join(tiny["results"].prompts(tiny["test_ids"][:40]))
    text *= 1 + (n * 101 + chars) // len(text)  # every prompt full length, not only the first few
    return [(f"[{i}] " + text[i * 101:])[:chars] for i in range(n)]


def test_warm_start_health_starting_then_ready_and_early_requests_wait(server, minilm_model):
    s = server(minilm_model, "server.limits.request_timeout_s=300")  # start-up may take long on a loaded machine
    early = {}

    def early_route():  # sent while the encoder is still loading: waits, then succeeds
        while True:
            try:
                early["r"] = httpx.post(s.base + "/v1/route", json={"prompts": ["is 2 + 2 = 4?"]}, timeout=120)
                return
            except httpx.TransportError:
                time.sleep(0.02)

    t = threading.Thread(target=early_route)
    t.start()
    seen = s.health_until_ready()
    t.join(120)
    assert seen[0] == "starting" and seen[-1] == "ready"
    assert early["r"].status_code == 200, early["r"].text
    body = httpx.get(s.base + "/health").json()
    assert body["featurizer"] == "SentenceTransformerFeaturizer" and body["n_llms"] == 3
    # server.precision defaults to auto: bfloat16 exactly where this CPU has AMX
    from assessors.features.sentence_transformer import resolve_precision

    assert body["encoder_precision"] == resolve_precision("auto", "cpu")


def test_full_queue_answers_503_with_retry_after(server, minilm_model):
    tiny = minilm_model[0]
    s = server(minilm_model, "server.batching.max_prompts=4", "server.batching.queue_max_prompts=12",
               "server.limits.request_timeout_s=300")
    s.health_until_ready()
    # 12 prompts each: whichever comes second finds 8 or 12 queued, and 8 + 12 > 12
    big = {"prompts": long_prompts(tiny, 12, 1000)}
    out = []
    threads = [threading.Thread(target=lambda: out.append(httpx.post(s.base + "/v1/route", json=big, timeout=300)))
               for _ in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(320)
    codes = sorted(r.status_code for r in out)
    assert codes == [200, 503], [r.text[:200] for r in out]
    full = next(r for r in out if r.status_code == 503)
    assert int(full.headers["Retry-After"]) >= 1 and full.json()["error"]["type"] == "overloaded"
    assert httpx.get(s.base + "/health").json()["queue"]["rejected"] == 1


def test_timed_out_request_is_cancelled_and_the_server_stays_responsive(server, minilm_model):
    tiny = minilm_model[0]
    # float32: bfloat16 on an AMX CPU could encode the 250 prompts within the 2 s
    s = server(minilm_model, "server.batching.max_prompts=4", "server.limits.request_timeout_s=2",
               "server.precision=float32")
    s.health_until_ready()
    # 250 prompts of 256 tokens: MiniLM in float32 needs about 7 s for them on 2 quiet cores
    r = httpx.post(s.base + "/v1/route", json={"prompts": long_prompts(tiny, 250, 3900)}, timeout=120)
    assert r.status_code == 504 and r.json()["error"]["type"] == "timeout"
    q = httpx.get(s.base + "/health").json()["queue"]
    # dropped at once: nothing of that request is queued any more
    assert q["jobs_cancelled"] == 1 and q["prompts_cancelled"] >= 50 and q["pending_prompts"] == 0
    deadline = time.monotonic() + 300
    while q["prompts_encoded"] + q["prompts_cancelled"] < 252 and time.monotonic() < deadline:
        time.sleep(0.2)  # the batch that was in the encoder when the request gave up finishes
        q = httpx.get(s.base + "/health").json()["queue"]
    # the 2 warm-up prompts + what fitted in 2 s: the rest of the 250 was never encoded
    assert q["prompts_encoded"] + q["prompts_cancelled"] == 252 and q["prompts_encoded"] <= 202
    r = httpx.post(s.base + "/v1/route", json={"prompts": ["a short one"]}, timeout=30)
    assert r.status_code == 200


def test_two_workers_each_with_the_configured_registry(server, unigram_model):
    tiny = unigram_model[0]
    s = server(unigram_model, "server.workers=2")
    s.health_until_ready()
    pids, n_llms = set(), set()
    deadline = time.monotonic() + 120
    while len(pids) < 2 and time.monotonic() < deadline:
        with httpx.Client() as c:  # a new connection each time: the kernel spreads them over the workers
            r = c.get(s.base + "/health")
        if r.status_code == 200:
            pids.add(r.json()["pid"])
            n_llms.add(r.json()["n_llms"])
    assert len(pids) == 2 and n_llms == {3}
    r = httpx.post(s.base + "/v1/route", json={"prompts": ["hello"]})
    assert r.status_code == 200 and set(r.json()["decisions"][0]["p_success"]) == set(tiny["train_llms"][:3])
    r = httpx.post(s.base + "/v1/llms", json={"name": "new", "reference": [1.0] * len(tiny["reference_ids"])})
    assert r.status_code == 409 and r.json()["error"]["type"] == "registry_per_process"


def _stalled_request(port: int) -> socket.socket:
    """A connection whose request declares a body and never sends it."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.sendall(b"POST /v1/predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: 100\r\n\r\n")
    return sock


def _answer(sock: socket.socket) -> tuple[int, dict, float]:
    """Status and JSON body of the response, and the seconds until the server closed the connection."""
    t, data = time.monotonic(), b""
    while chunk := sock.recv(65536):  # b"": closed by the server
        data += chunk
    sock.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body), time.monotonic() - t


def test_body_limits_on_a_real_server(server, unigram_model):
    tiny = unigram_model[0]
    s = server(unigram_model, "server.limits.body_timeout_s=2", "server.limits.max_slow_bodies_per_client=2",
               "server.limits.max_body_bytes=50000")
    s.health_until_ready()
    # a declared body that never comes: 408 at the timeout, then the connection is closed
    status, err, took = _answer(_stalled_request(s.port))
    assert status == 408 and err["error"]["type"] == "request_timeout" and 1.5 < took < 10
    # three at once from one address: the third is refused once slow (after 1 s), the two others time out
    socks = [_stalled_request(s.port) for _ in range(3)]
    answers = sorted(_answer(sock)[:2] for sock in socks)
    assert [a[0] for a in answers] == [408, 408, 429], answers
    # a chunked body over the limit: 413, not the 400 FastAPI gives for an error while it reads a body
    body = iter([b'{"prompts": ["a"], "pad": "', b"x" * 30_000, b"x" * 30_000, b'"}'])
    r = httpx.post(s.base + "/v1/predict", content=body, headers={"Content-Type": "application/json"}, timeout=30)
    assert r.status_code == 413 and r.json()["error"]["type"] == "request_too_large"
    # an infinite cost: 422 naming the field, not a 500
    ref = json.dumps([1.0] * len(tiny["reference_ids"]))
    r = httpx.post(s.base + "/v1/llms", content='{"name": "x", "reference": %s, "cost": {"per_item": 1e999}}' % ref,
                   headers={"Content-Type": "application/json"}, timeout=30)
    assert r.status_code == 422 and "cost.per_item" in r.json()["error"]["message"]
    # the server is still serving
    assert httpx.post(s.base + "/v1/predict", json={"prompts": ["still here?"]}, timeout=30).status_code == 200
