"""Serving latency/throughput of ``predict.py mode=serve`` vs bare MiniLM encoding (prints JSON).

The server runs on loopback in a subprocess (uvicorn via predict.py); this process is the load
generator and also times bare MiniLM encodes of the same prompts, in the same run.

    python benchmarks/serve_latency.py [--n-single 40] [--n-load 5000] [--concurrency 32]

Figures: p50/p99 of POST /v1/route for one new prompt and 3 LLMs vs a bare single-prompt
encode; batched route throughput vs bare batch encode; (prompt, LLM) scores/s on cached
prompts; a load run of n-load cached requests at the given concurrency with status counts
and the server's RSS before/after.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.processes import free_port, stop  # noqa: E402,F401 (free_port: also for serve_load)
DATA = os.environ.get("ASSESSORS_DATA_DIR", str(ROOT.parent / "shared" / "data"))


def build_model(out_dir: Path, n_train: int, cache_dir: str, featurizer=None):
    """Fit a generic assessor (MiniLM, or ``featurizer``, + small XGBoost) on RouterBench train prompts;
    save it as an MLflow pyfunc model."""
    import mlflow.pyfunc
    from xgboost import XGBClassifier

    from assessors.classifiers.grid import ParamGrid
    from assessors.core.generic import GenericAssessor
    from assessors.core.pyfunc import AssessorModel
    from assessors.data.loaders.routerbench import load_routerbench
    from assessors.features.sentence_transformer import SentenceTransformerFeaturizer

    res = load_routerbench(DATA, responses=False)
    split = res.instances["routerbench_split"].to_numpy()
    train = list(res.instances.index[split == "train"])[:n_train]
    test = list(res.instances.index[split == "test"])
    feat = featurizer if featurizer is not None else SentenceTransformerFeaturizer(cache_dir=cache_dir, show_progress=False)
    X = feat.fit(res.prompts(train)).transform(res.prompts(train))
    ref = np.arange(0, n_train, max(1, n_train // 100))[:100]
    S = res.matrix(None, train)
    gen = GenericAssessor(ParamGrid(XGBClassifier(n_estimators=100, max_depth=4, n_jobs=1, tree_method="hist"))).fit(X, S, ref)
    ref_ids = [train[i] for i in ref]
    model = AssessorModel(gen, feat, ref_ids, res.matrix(None, ref_ids), res.llms)
    mlflow.pyfunc.save_model(str(out_dir), python_model=model)
    return res, test, model


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def pct(xs, q) -> float:
    return float(np.percentile(np.asarray(xs) * 1000, q))


async def load(url: str, bodies: list[dict], concurrency: int) -> dict:
    import httpx

    codes: dict[int, int] = {}
    lat: list[float] = []
    it = iter(bodies)

    async def worker(client):
        for body in it:
            t = time.perf_counter()
            try:
                r = await client.post(url, json=body)
                codes[r.status_code] = codes.get(r.status_code, 0) + 1
            except httpx.HTTPError as e:
                codes[type(e).__name__] = codes.get(type(e).__name__, 0) + 1
            lat.append(time.perf_counter() - t)

    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(limits=limits, timeout=120) as client:
        t0 = time.perf_counter()
        await asyncio.gather(*(worker(client) for _ in range(concurrency)))
        wall = time.perf_counter() - t0
    return {"n": len(bodies), "concurrency": concurrency, "status_counts": {str(k): v for k, v in codes.items()},
            "wall_s": wall, "requests_per_s": len(bodies) / wall, "p50_ms": pct(lat, 50), "p99_ms": pct(lat, 99)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-train", type=int, default=400, help="RouterBench train prompts the assessor is fitted on")
    ap.add_argument("--n-single", type=int, default=40, help="single-prompt requests (and bare encodes)")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--n-load", type=int, default=5000)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--cache-dir", default=os.path.expanduser("~/.cache/assessors/embeddings"))
    args = ap.parse_args()
    import httpx

    out: dict = {"cpus": os.cpu_count(), "loadavg_start": os.getloadavg()}
    tmp = Path(tempfile.mkdtemp(prefix="serve_bench_"))
    res, test, model = build_model(tmp / "assessor", args.n_train, args.cache_dir)
    llms3 = ["mistralai/mixtral-8x7b-chat", "zero-one-ai/Yi-34B-Chat", "gpt-4-1106-preview"]
    single = res.prompts(test[:args.n_single])
    batch = res.prompts(test[args.n_single:args.n_single + args.batch])

    # bare encode of the same prompts (no cache), this process
    feat = model.featurizer
    feat._transform(single[:2])  # load the model and warm up
    enc = []
    for p in single:
        t = time.perf_counter()
        feat._transform([p])
        enc.append(time.perf_counter() - t)
    t = time.perf_counter()
    feat._transform(batch)
    bare_batch_s = time.perf_counter() - t
    out["bare_encode_single"] = {"p50_ms": pct(enc, 50), "p99_ms": pct(enc, 99), "n": len(enc)}
    out["bare_encode_batch"] = {"batch": len(batch), "prompts_per_s": len(batch) / bare_batch_s}

    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    cmd = [sys.executable, str(ROOT / "predict.py"), "mode=serve", f"model_uri={tmp / 'assessor'}",
           f"known_llms=[{','.join(llms3)}]", "server.auth.enabled=false", f"server.port={port}",
           "server.log_level=warning", "server.limits.max_batch=512", "router=threshold",
           "default_cost.per_1k_input=0.001", f"hydra.run.dir={tmp / 'run'}"]
    log = open(tmp / "server.log", "wb")
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 300
        while True:
            try:
                if httpx.get(base + "/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.time() > deadline:
                raise RuntimeError("server did not start:\n" + (tmp / "server.log").read_text()[-3000:])
            time.sleep(0.5)
        with httpx.Client(timeout=120) as c:
            c.post(base + "/v1/route", json={"prompts": ["warm-up prompt"]}).raise_for_status()
            lat = []
            for p in single:  # new prompts: each request embeds once
                t = time.perf_counter()
                c.post(base + "/v1/route", json={"prompts": [p]}).raise_for_status()
                lat.append(time.perf_counter() - t)
            out["route_single_uncached"] = {"p50_ms": pct(lat, 50), "p99_ms": pct(lat, 99), "n": len(lat),
                                            "n_llms": 3}
            t = time.perf_counter()
            c.post(base + "/v1/route", json={"prompts": batch}).raise_for_status()
            out["route_batch_uncached"] = {"batch": len(batch), "prompts_per_s": len(batch) / (time.perf_counter() - t)}
            # cached prompts, all 11 LLMs registered on the fly
            for n in res.llms:
                if n not in llms3:
                    c.post(base + "/v1/llms", json={"name": n, "reference": [None if v != v else float(v) for v in model.reference_success[model.llms.index(n)]]}).raise_for_status()
            cached = single + batch
            t = time.perf_counter()
            reps = 5
            for _ in range(reps):
                c.post(base + "/v1/predict", json={"prompts": cached}).raise_for_status()
            dt = time.perf_counter() - t
            out["cached_scores"] = {"pairs_per_s": reps * len(cached) * len(res.llms) / dt, "batch": len(cached),
                                    "n_llms": len(res.llms)}
        rng = np.random.default_rng(0)
        bodies = [{"prompts": [cached[i]], "llms": llms3} for i in rng.integers(0, len(cached), args.n_load)]
        warm = min(1000, args.n_load // 5)
        rss0 = rss_mb(proc.pid)
        out["load_warmup"] = asyncio.run(load(base + "/v1/route", bodies[:warm], args.concurrency))
        rss1 = rss_mb(proc.pid)
        out["load"] = asyncio.run(load(base + "/v1/route", bodies[warm:], args.concurrency))
        rss2 = rss_mb(proc.pid)
        out["server_rss_mb"] = {"before_load": rss0, "after_warmup": rss1, "after_load": rss2,
                                "growth_after_warmup_mb": rss2 - rss1}
        n5xx = sum(v for k, v in {**out["load"]["status_counts"], **{f"w{k}": v for k, v in out["load_warmup"]["status_counts"].items()}}.items()
                   if str(k).lstrip("w").startswith("5"))
        out["load_total_requests"] = args.n_load
        out["load_5xx"] = n5xx
    finally:
        stop(proc)
    s, r = out["bare_encode_single"], out["route_single_uncached"]
    out["ratios"] = {"route_p50_over_encode_p50": r["p50_ms"] / s["p50_ms"],
                     "route_p99_over_encode_p50": r["p99_ms"] / s["p50_ms"],
                     "route_p99_over_encode_p99": r["p99_ms"] / s["p99_ms"],
                     "batch_route_over_bare_batch": out["route_batch_uncached"]["prompts_per_s"]
                     / out["bare_encode_batch"]["prompts_per_s"]}
    out["loadavg_end"] = os.getloadavg()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
