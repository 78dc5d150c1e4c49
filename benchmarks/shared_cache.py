"""Concurrent runs sharing one embedding cache: how many texts each process embeds, and the time.

Usage::

    python benchmarks/shared_cache.py --features static --procs 2     # all BBH+MuSR prompts
    python benchmarks/shared_cache.py --features unigram --procs 3 --n 2000

Builds the featurizer from ``conf/features/<name>.yaml``, then embeds the same prompts cold, in a
fresh cache directory each time: first in one process alone, then in ``--procs`` processes started
together. Prints one JSON object: per process, the texts it embedded itself and its wall time;
the number of texts embedded more than once. The machine may be shared: compare the times within
one run.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from embedding_throughput import ROOT, load_prompts

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def build(features: str, cache_dir: str, model_dir: str | None):
    """The featurizer of ``conf/features/<features>.yaml`` with its caches redirected."""
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    cfg = OmegaConf.load(ROOT / "conf" / "features" / f"{features}.yaml")
    cfg.cache_dir = cache_dir
    if "model_dir" in cfg:
        from assessors.features.static import default_model_dir

        cfg.model_dir = model_dir or default_model_dir()
    if "show_progress" in cfg:
        cfg.show_progress = False
    return instantiate(cfg)


def embed(features: str, cache_dir: str, model_dir: str | None, texts: list[str], barrier, out) -> None:
    """One process: fit (featurizers that learn), load the model, then at the barrier embed ``texts``."""
    f = build(features, cache_dir, model_dir).fit(texts)
    if hasattr(f, "model"):
        f.model  # noqa: B018 - load outside the timed region
    compute, computed = f._transform, []

    def counting(chunk):
        computed.extend(chunk)
        return compute(chunk)

    f._transform = counting
    barrier.wait()
    t = time.perf_counter()
    X = f.transform(texts)
    out.put({"pid": os.getpid(), "wall_s": round(time.perf_counter() - t, 2), "embedded": len(computed),
             "texts": computed, "shape": list(X.shape)})


def run(n: int, features: str, model_dir: str | None, texts: list[str]) -> list[dict]:
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(n), ctx.Queue()
    with tempfile.TemporaryDirectory() as cache_dir:
        procs = [ctx.Process(target=embed, args=(features, cache_dir, model_dir, texts, barrier, out)) for _ in range(n)]
        for p in procs:
            p.start()
        results = [out.get() for _ in procs]
        for p in procs:
            p.join()
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--features", default="static", help="a conf/features/ name (static, unigram, minilm, ...)")
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--n", type=int, default=None, help="the first N prompts (default: all)")
    ap.add_argument("--model-dir", default=None, help="static models (default: the shared cache's)")
    args = ap.parse_args()
    data_dir = Path(os.environ.get("ASSESSORS_DATA_DIR", ROOT.parent / "shared" / "data"))
    texts = list(dict.fromkeys(load_prompts(data_dir)))[:args.n]
    alone = run(1, args.features, args.model_dir, texts)
    together = run(args.procs, args.features, args.model_dir, texts)
    counts: dict[str, int] = {}
    for r in together:
        for t in r.pop("texts"):
            counts[t] = counts.get(t, 0) + 1
    alone[0].pop("texts")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    print(json.dumps({
        "features": args.features, "texts": len(texts), "alone": alone[0], "together": together,
        "embedded_more_than_once": sum(c > 1 for c in counts.values()),
        "not_embedded": len(texts) - len(counts),
        "commit": commit.strip(), "cpu_count": os.cpu_count(), "platform": platform.platform(),
        "load_avg_1m": os.getloadavg()[0], "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime())}, indent=2))


if __name__ == "__main__":
    main()
