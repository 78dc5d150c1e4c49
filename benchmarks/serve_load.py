"""Load test of ``predict.py mode=serve`` on loopback: throughput, fairness, warm start, memory (prints JSON).

The server runs in a subprocess (uvicorn via predict.py, auth on, two API keys); this process
fits the assessor, times bare encodes of the same prompts, and generates the load (aiohttp).
Every request count and phase duration is bounded; only 127.0.0.1 is contacted.

    python benchmarks/serve_load.py --features static [--n 5000] [--concurrency 32] [--workers 1]
    python benchmarks/serve_load.py --features minilm --n 1000 --phases first,uniform

Phases (``--phases``, comma-separated):
  first    start-up: time to ``ready``, the first /v1/route after it vs warm requests
  uniform  ``--n`` requests, each 1 new prompt x 3 LLMs, ``--concurrency`` closed-loop clients;
           compared with bare one-at-a-time ``encode`` of the same prompts in this process
  mixed    12 concurrent heavy requests (30 prompts x 32k characters, client A) during a steady
           stream of 1-prompt requests (client B, open loop at ``--light-rate``/s)
  memory   ``--n-memory`` requests (uncached, concurrency as above); server RSS every 2,000 answers,
           and polled every 0.2 s (the median of each 2,000-request window)
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from serve_latency import build_model, free_port, pct, rss_mb  # noqa: E402

from tests.processes import stop  # noqa: E402

LLMS3 = ["mistralai/mixtral-8x7b-chat", "zero-one-ai/Yi-34B-Chat", "gpt-4-1106-preview"]
KEY_A, KEY_B = "bench-key-heavy-0123456789", "bench-key-light-0123456789"


def unique_prompts(base: list[str], n: int, tag: str) -> list[str]:
    """``n`` distinct prompts: the real prompts, each with a request number appended (never cached)."""
    return [f"{base[i % len(base)]}\n\n[{tag} {i}]" for i in range(n)]


def summary(lat: list[float], codes: dict, wall: float | None = None) -> dict:
    out = {"n": len(lat), "status_counts": {str(k): v for k, v in sorted(codes.items(), key=str)}}
    if lat:
        out.update(p50_ms=pct(lat, 50), p99_ms=pct(lat, 99), max_ms=float(np.max(lat) * 1000))
    if wall:
        out.update(wall_s=wall, requests_per_s=len(lat) / wall)
    return out


async def closed_loop(session, url: str, bodies: list[dict], concurrency: int, key: str,
                      on_done=None) -> dict:
    """``concurrency`` clients, each sending its next body when the previous answer arrived."""
    import aiohttp

    codes: dict = {}
    lat: list[float] = []
    it = iter(enumerate(bodies))
    headers = {"Authorization": f"Bearer {key}"}

    async def worker():
        for i, body in it:
            t = time.perf_counter()
            try:
                async with session.post(url, json=body, headers=headers) as r:
                    await r.read()
                    codes[r.status] = codes.get(r.status, 0) + 1
            except aiohttp.ClientError as e:
                codes[type(e).__name__] = codes.get(type(e).__name__, 0) + 1
            lat.append(time.perf_counter() - t)
            if on_done is not None:
                on_done(len(lat))

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return summary(lat, codes, time.perf_counter() - t0)


async def one(session, url, body, key):
    t = time.perf_counter()
    async with session.post(url, json=body, headers={"Authorization": f"Bearer {key}"}) as r:
        await r.read()
        return r.status, time.perf_counter() - t


async def mixed(session, url: str, heavy: list[dict], light: list[dict], rate: float) -> dict:
    """Heavy requests all at once (client A) while light ones arrive at ``rate``/s (client B)."""
    import aiohttp

    async def timed(body, key):
        t = time.perf_counter()
        try:
            async with session.post(url, json=body, headers={"Authorization": f"Bearer {key}"}) as r:
                await r.read()
                return r.status, time.perf_counter() - t
        except aiohttp.ClientError as e:
            return type(e).__name__, time.perf_counter() - t

    async def stream():
        tasks = []
        t0 = time.perf_counter()
        for i, body in enumerate(light):
            await asyncio.sleep(max(0.0, t0 + i / rate - time.perf_counter()))
            tasks.append(asyncio.create_task(timed(body, KEY_B)))
        return await asyncio.gather(*tasks)

    light_task = asyncio.create_task(stream())
    await asyncio.sleep(0.5)  # the stream is flowing when the burst arrives
    heavy_res = await asyncio.gather(*(timed(b, KEY_A) for b in heavy))
    light_res = await light_task

    def agg(res):
        codes: dict = {}
        for c, _ in res:
            codes[c] = codes.get(c, 0) + 1
        return summary([d for _, d in res], codes)

    return {"heavy": agg(heavy_res), "light": agg(light_res), "light_rate_per_s": rate}


async def memory_phase(session, url: str, proc, prompts: list[str], args) -> dict:
    """The memory phase: server RSS at every 2,000th answer, and polled every 0.2 s. A single sample
    swings with the activations of the batch in flight, so the median of each 2,000-request window
    is compared too (requests 2,000-4,000 against the last window)."""
    bodies = [{"prompts": [p], "llms": LLMS3} for p in unique_prompts(prompts, args.n_memory, "memory")]
    samples: dict = {}
    polled: list[tuple[int, float]] = []
    done = [0]

    def on_done(k):
        done[0] = k
        if k % 2000 == 0:
            samples[k] = server_rss_mb(proc)

    async def poll():
        while True:
            polled.append((done[0], server_rss_mb(proc)))
            await asyncio.sleep(0.2)

    la0 = os.getloadavg()
    poller = asyncio.get_running_loop().create_task(poll())
    try:
        res = await cpu_cost(proc, closed_loop)(session, url, bodies, args.concurrency, KEY_B, on_done)
    finally:
        poller.cancel()
    windows: dict = {}
    for k, r in polled:
        if k > 0:
            windows.setdefault(2000 * ((k - 1) // 2000 + 1), []).append(r)
    med = {k: float(np.median(v)) for k, v in sorted(windows.items())}
    ks, last = sorted(samples), max(med, default=None)
    return {**res, "rss_mb_by_request": samples,
            "growth_from_2000_pct": 100 * (samples[ks[-1]] / samples[2000] - 1) if 2000 in samples else None,
            "rss_mb_window_median": med, "rss_mb_max": max((r for _, r in polled), default=None),
            "growth_window_median_pct": 100 * (med[last] / med[4000] - 1) if 4000 in med and last != 4000 else None,
            "loadavg_before": la0, "loadavg_after": os.getloadavg()}


def start_server(model_dir: Path, tmp: Path, port: int, workers: int, extra: list[str]) -> subprocess.Popen:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "ASSESSORS_API_KEYS": f"{KEY_A},{KEY_B}"}
    cmd = [sys.executable, str(ROOT / "predict.py"), "mode=serve", f"model_uri={model_dir}",
           f"known_llms=[{','.join(LLMS3)}]", f"server.port={port}", f"server.workers={workers}",
           "server.log_level=warning", "router=threshold", "default_cost.per_1k_input=0.001", "trust.enabled=false",
           f"hydra.run.dir={tmp / 'run'}", *extra]
    log = open(tmp / "server.log", "ab")
    return subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env)


def server_pids(proc: subprocess.Popen) -> list[int]:
    """The server and its worker processes (uvicorn spawns workers when workers > 1)."""
    pids = [proc.pid]
    try:
        pids += [int(p) for p in Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()]
    except OSError:
        pass
    return pids


def server_rss_mb(proc: subprocess.Popen) -> float:
    return sum(rss_mb(p) for p in server_pids(proc))


def server_cpu_s(proc: subprocess.Popen) -> float:
    """User + system CPU seconds of the server processes so far."""
    total = 0.0
    for pid in server_pids(proc):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except OSError:
            pass
    return total


def cpu_cost(proc, fn):
    """Decorate a phase's result with CPU ms per request of the server and of this load generator."""
    async def wrapped(*a, **k):
        s0, c0 = server_cpu_s(proc), time.process_time()
        res = await fn(*a, **k)
        n = max(1, res.get("n", 1))
        res["server_cpu_ms_per_request"] = 1000 * (server_cpu_s(proc) - s0) / n
        res["client_cpu_ms_per_request"] = 1000 * (time.process_time() - c0) / n
        return res
    return wrapped


async def wait_ready(session, base: str, proc, timeout: float = 600) -> dict:
    """Poll /health; returns seconds to first answer, to ready, and the statuses seen."""
    import aiohttp

    t0 = time.perf_counter()
    seen: dict = {}
    first_answer = None
    while True:
        try:
            async with session.get(base + "/health") as r:
                body = await r.json()
                first_answer = first_answer or time.perf_counter() - t0
                seen[body["status"]] = seen.get(body["status"], 0) + 1
                if r.status == 200:
                    return {"first_health_answer_s": first_answer, "ready_s": time.perf_counter() - t0,
                            "health_statuses_seen": seen}
        except (aiohttp.ClientError, OSError):
            pass
        if proc.poll() is not None or time.perf_counter() - t0 > timeout:
            raise RuntimeError("server did not become ready")
        await asyncio.sleep(0.05)


async def run(args, tmp: Path, model_dir: Path, prompts: list[str], out: dict) -> None:
    import aiohttp

    phases = set(args.phases.split(","))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    extra = [f"server.batching.max_prompts={args.batch}", f"server.precision={args.precision}"] + (args.server_override or [])
    conn = aiohttp.TCPConnector(limit=max(64, args.concurrency * 2))
    async with aiohttp.ClientSession(connector=conn, timeout=aiohttp.ClientTimeout(total=120)) as session:
        proc = start_server(model_dir, tmp, port, args.workers, extra)
        try:
            out["startup"] = await wait_ready(session, base, proc)
            url = base + "/v1/route"
            if "first" in phases:
                first = unique_prompts(prompts, 41, "first")
                status, dt = await one(session, url, {"prompts": [first[0]], "llms": LLMS3}, KEY_B)
                warm = [(await one(session, url, {"prompts": [p], "llms": LLMS3}, KEY_B))[1] for p in first[1:]]
                out["first_request"] = {"status": status, "first_ms": dt * 1000, "warm_p50_ms": pct(warm, 50),
                                        "first_over_warm_p50": dt / float(np.median(warm)), "n_warm": len(warm)}
            if "uniform" in phases:
                bodies = [{"prompts": [p], "llms": LLMS3} for p in unique_prompts(prompts, args.n, "uniform")]
                la0, rss0 = os.getloadavg(), server_rss_mb(proc)
                res = await cpu_cost(proc, closed_loop)(session, url, bodies, args.concurrency, KEY_B)
                out["uniform"] = {**res, "concurrency": args.concurrency, "rss_mb_before": rss0,
                                  "rss_mb_after": server_rss_mb(proc), "loadavg_before": la0, "loadavg_after": os.getloadavg()}
            if "mixed" in phases:
                # plain ASCII without characters JSON escapes: 30 x 32,000 characters stay within the 1 MB body limit
                filler = re.sub(r'[^ -~]|["\\]', " ", " ".join(prompts))
                heavy = [{"prompts": [(f"[heavy {r}-{i}] " + filler[(r * 30 + i) * 997:])[:32000] for i in range(30)],
                          "llms": LLMS3} for r in range(12)]
                light = [{"prompts": [p], "llms": LLMS3}
                         for p in unique_prompts(prompts, int(args.light_rate * args.mixed_s), "light")]
                la0 = os.getloadavg()
                out["mixed"] = {**await mixed(session, url, heavy, light, args.light_rate),
                                "loadavg_before": la0, "loadavg_after": os.getloadavg()}
            if "memory" in phases:
                out["memory"] = await memory_phase(session, url, proc, prompts, args)
            async with session.get(base + "/health") as r:
                out["health_after"] = await r.json()
        finally:
            stop(proc, timeout=20)


def served_precision(f, precision: str) -> str | None:
    """The resolved precision the server encodes in (None: the featurizer has no such option)."""
    if "precision" not in f.get_params(deep=False):
        return None
    from assessors.features.sentence_transformer import resolve_precision

    return resolve_precision(precision, f.device)


def bare_encode(f, prompts: list[str], precision: str | None) -> dict:
    """Wall and CPU rate of encoding ``prompts`` one at a time, then in one batched call, in
    ``precision`` (None: the featurizer as it is)."""
    if precision is not None:
        f.set_params(precision=precision)
    f._transform(prompts[:2])  # warm this precision's kernels
    t, c = time.perf_counter(), time.process_time()
    for p in prompts:
        f._transform([p])
    dt, dc = time.perf_counter() - t, time.process_time() - c
    t, c = time.perf_counter(), time.process_time()
    f._transform(prompts)
    dtb, dcb = time.perf_counter() - t, time.process_time() - c
    n = len(prompts)
    return {"one_at_a_time_per_s": n / dt, "batched_per_s": n / dtb, "one_at_a_time_cpu_ms": 1e3 * dc / n,
            "batched_cpu_ms": 1e3 * dcb / n, "loadavg": os.getloadavg()[0]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--features", choices=["static", "minilm"], default="static")
    ap.add_argument("--phases", default="first,uniform,mixed,memory")
    ap.add_argument("--n-train", type=int, default=400, help="RouterBench train prompts the assessor is fitted on")
    ap.add_argument("--n", type=int, default=5000, help="requests of the uniform phase")
    ap.add_argument("--n-bare", type=int, default=None, help="prompts encoded one at a time in-process (default --n)")
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--batch", type=int, default=32, help="server.batching.max_prompts")
    ap.add_argument("--light-rate", type=float, default=20.0)
    ap.add_argument("--mixed-s", type=float, default=20.0, help="duration of the light stream")
    ap.add_argument("--n-memory", type=int, default=20000)
    ap.add_argument("--precision", default="auto", choices=["float32", "bfloat16", "auto"],
                    help="server.precision (MiniLM's encoder arithmetic); bare encodes run in it and in float32")
    ap.add_argument("--server-override", action="append", help="extra predict.py override (repeatable)")
    ap.add_argument("--cache-dir", default=os.path.expanduser("~/.cache/assessors/embeddings"))
    args = ap.parse_args()

    out: dict = {"features": args.features, "cpus": os.cpu_count(), "loadavg_start": os.getloadavg(),
                 "args": vars(args)}
    tmp = Path(tempfile.mkdtemp(prefix="serve_load_"))
    if args.features == "static":
        from assessors.features.static import StaticEmbeddingFeaturizer

        feat = StaticEmbeddingFeaturizer(cache_dir=args.cache_dir)
    else:
        from assessors.features.sentence_transformer import SentenceTransformerFeaturizer

        feat = SentenceTransformerFeaturizer(cache_dir=args.cache_dir, show_progress=False)
    res, test, model = build_model(tmp / "assessor", args.n_train, args.cache_dir, feat)
    prompts = res.prompts(list(res.instances.index))

    # bare encode of the uniform phase's prompts, one at a time (a server without cross-request
    # batching), no cache; before and after the server phases, so both see the same background load;
    # in the served precision (the like-for-like ratio) and in float32 (the trained featurizer's)
    n_bare = args.n_bare or args.n
    bare = unique_prompts(prompts, n_bare, "uniform")
    f = model.featurizer
    served = served_precision(f, args.precision)
    precisions = [None] if served is None else sorted({served, "float32"})
    before = {p: bare_encode(f, bare, p) for p in precisions}
    asyncio.run(run(args, tmp, tmp / "assessor", prompts, out))
    after = {p: bare_encode(f, bare, p) for p in precisions}
    out["served_precision"] = served
    out["bare_encode"] = {str(p): {"n": n_bare, "before": before[p], "after": after[p],
                                   **{k: (before[p][k] + after[p][k]) / 2 for k in before[p]}} for p in precisions}
    if "uniform" in out:
        u = out["uniform"]
        for p in precisions:
            b, tag = out["bare_encode"][str(p)], "" if p == served else f"_{p}"
            u[f"over_bare_one_at_a_time{tag}"] = u["requests_per_s"] / b["one_at_a_time_per_s"]
            # CPU time is far less sensitive to other processes than wall time on a shared machine
            u[f"cpu_over_bare_one_at_a_time{tag}"] = b["one_at_a_time_cpu_ms"] / u["server_cpu_ms_per_request"]
    out["loadavg_end"] = os.getloadavg()
    print(json.dumps(out, indent=2, default=str))


if __name__ == "__main__":
    main()
