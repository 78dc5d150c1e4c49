"""MiniLM encode rate by precision, prompts per call and torch threads, on RouterBench prompts (prints JSON).

    python benchmarks/encoder_precision.py [--n 256] [--batch-sizes 1 4 8 16 32] [--threads 2 1]

What ``server.precision`` trades: each cell is the rate of ``SentenceTransformerFeaturizer._transform``
(no cache) over ``--n`` distinct prompts, cut into calls of ``batch_size`` prompts (1 = one call per
prompt, the bare one-at-a-time loop), with wall and CPU time. ``cosine_min`` is the smallest cosine
similarity between each precision's embeddings and float32's; ``p_success_abs_diff`` compares the
P(success) of per-LLM logistic regressions (fitted on float32 embeddings) from float32 and from
bfloat16 embeddings of these prompts. In bfloat16 the featurizer splits a call into forward passes
of at most ``BF16_BATCH`` (16) prompts, so larger ``batch_size`` cells measure 16-prompt passes.
Compare cells of one run only: the machine is shared.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DATA = os.environ.get("ASSESSORS_DATA_DIR", str(ROOT.parent / "shared" / "data"))


def rate(f, prompts: list[str], batch_size: int) -> tuple[dict, np.ndarray]:
    """Prompts/s and CPU ms per prompt of encoding ``prompts`` in calls of ``batch_size``, and the embeddings."""
    f.batch_size = batch_size
    t, c = time.perf_counter(), time.process_time()
    parts = [f._transform(prompts[i:i + batch_size]) for i in range(0, len(prompts), batch_size)]
    dt, dc = time.perf_counter() - t, time.process_time() - c
    return {"prompts_per_s": len(prompts) / dt, "cpu_ms_per_prompt": 1e3 * dc / len(prompts)}, np.concatenate(parts)


def prediction_shift(f, prompts: list[str], n_train: int) -> dict:
    """Max and mean |P(success, bfloat16) - P(success, float32)| over the prompts x RouterBench's LLMs,
    from one logistic regression per LLM fitted on float32 embeddings of ``n_train`` train prompts
    (a model that uses every embedding dimension; the serving benchmark's small XGBoost assessor
    barely depends on the prompt, so it would hide any change)."""
    from sklearn.linear_model import LogisticRegression

    from assessors.data.loaders.routerbench import load_routerbench

    res = load_routerbench(DATA, responses=False)
    split = res.instances["routerbench_split"].to_numpy()
    train = list(res.instances.index[split == "train"])[:n_train]
    f.set_params(precision="float32")
    X = f._transform(res.prompts(train))
    S = res.matrix(None, train)
    models = [LogisticRegression(max_iter=1000).fit(X[np.isfinite(y)], y[np.isfinite(y)]) for y in S
              if len(np.unique(y[np.isfinite(y)])) == 2]
    P = {}
    for precision in ("float32", "bfloat16"):
        f.set_params(precision=precision)
        Xp = f._transform(prompts)
        P[precision] = np.stack([m.predict_proba(Xp)[:, 1] for m in models])
    d = np.abs(P["bfloat16"] - P["float32"])
    return {"max": float(d.max()), "mean": float(d.mean()), "n_pairs": int(d.size), "n_llms": len(models)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=256, help="distinct RouterBench prompts (seeded sample)")
    ap.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 4, 8, 16, 32])
    ap.add_argument("--threads", type=int, nargs="+", default=[2, 1])
    ap.add_argument("--precisions", nargs="+", default=["float32", "bfloat16"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n-train", type=int, default=400, help="RouterBench train prompts of the assessor")
    args = ap.parse_args()

    import torch

    from assessors.data.loaders.routerbench import load_routerbench
    from assessors.features.sentence_transformer import SentenceTransformerFeaturizer, cpu_has_amx

    res = load_routerbench(DATA, responses=False)
    pool = res.prompts(list(res.instances.index))
    rng = np.random.default_rng(args.seed)
    prompts = [pool[i] + f" [{k}]" for k, i in enumerate(rng.choice(len(pool), args.n, replace=False))]
    f = SentenceTransformerFeaturizer(show_progress=False)
    tokens = [len(ids) for ids in f.model.tokenizer(prompts, truncation=True, max_length=256)["input_ids"]]
    out = {"n": args.n, "cpu": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
           "amx": cpu_has_amx(), "tokens_mean": float(np.mean(tokens)), "loadavg_start": os.getloadavg(), "cells": []}
    ref = None
    for precision in args.precisions:
        f.set_params(precision=precision)
        f._transform(prompts[:4])  # this precision's kernels, before timing
        for threads in args.threads:
            torch.set_num_threads(threads)
            for bs in args.batch_sizes:
                cell, emb = rate(f, prompts, bs)
                ref = emb if ref is None else ref
                out["cells"].append({"precision": precision, "threads": threads, "batch_size": bs, **cell,
                                     "cosine_min": float((emb * ref).sum(1).min()), "loadavg": os.getloadavg()[0]})
    out["p_success_abs_diff"] = prediction_shift(f, prompts, args.n_train)
    out["loadavg_end"] = os.getloadavg()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
