"""Memory and CPU of the bfloat16 MiniLM encoder by oneDNN kernel-cache cap (prints JSON).

    python benchmarks/kernel_cache.py [--caps 0 16] [--lengths 64 128 192 256] [--max-batch 16]

oneDNN prepares a kernel (a "primitive") for every input shape and keeps up to 1,024 of them. The
server's encoder meets every forward-pass shape in time (batches of 1 to 16 prompts in 64-token
length steps), so its memory grows until it has seen them all. For each cap (0 = oneDNN's default;
``server.batching.kernel_cache``), a fresh process sets the cap before its first encode, encodes one
prompt, then a batch of every shape twice, and reports its resident memory after a ``malloc_trim``
at each step and the CPU time of the second sweep (with a small cap every kernel of that sweep is
prepared again). Compare caps within one run: the machine is shared.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def resident_mb() -> float:
    """This process's resident memory after returning free heap memory to the OS (MB)."""
    from assessors.serving.heap import HeapTrimmer

    trimmer = HeapTrimmer(1e-9)
    if trimmer.available:
        trimmer.trim()
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def measure(cap: int, lengths: list[int], max_batch: int) -> dict:
    """One cap, in this (fresh) process."""
    from assessors.serving.heap import limit_kernel_cache

    in_force = limit_kernel_cache(cap)
    import torch

    from assessors.features.sentence_transformer import SentenceTransformerFeaturizer

    torch.set_num_threads(1)
    f = SentenceTransformerFeaturizer(show_progress=False, precision="bfloat16", batch_size=max_batch)
    f._transform(["warm-up"])
    # "a" is one token, so a text of n-2 of them fills n tokens with [CLS] and [SEP]
    texts = {n: " ".join(["a"] * (n - 2)) for n in lengths}
    out = {"cap": in_force, "rss_mb_one_shape": resident_mb()}
    for sweep in ("first", "second"):
        t = time.process_time()
        for n in lengths:
            for b in range(1, max_batch + 1):
                f._transform([texts[n]] * b)
        out[f"cpu_s_{sweep}_sweep"] = time.process_time() - t
        out[f"rss_mb_after_{sweep}_sweep"] = resident_mb()
    out["growth_mb"] = out["rss_mb_after_second_sweep"] - out["rss_mb_one_shape"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--caps", type=int, nargs="+", default=[0, 16])
    ap.add_argument("--lengths", type=int, nargs="+", default=[64, 128, 192, 256])
    ap.add_argument("--max-batch", type=int, default=16)
    ap.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)  # child process: one cap
    args = ap.parse_args()
    if args.one is not None:
        print(json.dumps(measure(args.one, args.lengths, args.max_batch)))
        return
    env = {k: v for k, v in os.environ.items() if k != "ONEDNN_PRIMITIVE_CACHE_CAPACITY"}
    runs = []
    for cap in args.caps:
        cmd = [sys.executable, __file__, "--one", str(cap), "--lengths", *map(str, args.lengths),
               "--max-batch", str(args.max_batch)]
        res = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
        runs.append(json.loads(res.stdout.strip().splitlines()[-1]))
    print(json.dumps({"machine": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
                      "loadavg": os.getloadavg(), "shapes": len(args.lengths) * args.max_batch, "runs": runs},
                     indent=2))


if __name__ == "__main__":
    main()
