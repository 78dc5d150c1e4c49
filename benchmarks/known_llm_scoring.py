"""Scoring the LLMs a latent model knows: from the posterior stored with the model against the reference
conditioning (prints JSON).

A model logged by ``python train.py assessor=latent`` stores its training LLMs' posterior given all their
training answers (``AssessorModel.known_posterior``); the engine scores them all in one call. Without it,
each request conditions every LLM on its reference answers again. Both engines score the same prompt
features for every known LLM, in one run, so compare the ratio rather than the times.

    python benchmarks/known_llm_scoring.py --model-uri <logged assessor: runs:/<id>/assessor or a directory>
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's package, not another installed copy


def time_scoring(model, X: np.ndarray, repeat: int) -> float:
    """Median milliseconds of one ``score_with_spread`` of every known LLM on features ``X`` (m, d)."""
    from assessors.routing.setup import build_engine

    engine = build_engine(None, model=model, known_llms="all", trust={"enabled": False})
    entries = engine.resolve(None)
    engine.score_with_spread(X, entries)  # warm-up
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        engine.score_with_spread(X, entries)
        times.append(time.perf_counter() - t0)
    return 1000 * float(np.median(times))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model-uri", required=True)
    ap.add_argument("--tracking-uri", default=None)
    ap.add_argument("--n-prompts", type=int, nargs="+", default=[1, 32, 256])
    ap.add_argument("--repeat", type=int, default=30)
    args = ap.parse_args()
    from assessors.routing.engine import load_assessor_model

    model = load_assessor_model(args.model_uri, args.tracking_uri)
    known = model.known_states
    if known is None:
        raise SystemExit("this model stores no known LLMs' states: log it with python train.py assessor=latent")
    d = model.assessor.reference_features_.shape[1]
    rng = np.random.default_rng(0)
    rows = []
    for m in args.n_prompts:
        X = rng.standard_normal((m, d)).astype(np.float32)
        X /= np.linalg.norm(X, axis=1, keepdims=True)
        model.known_states = known
        stored = time_scoring(model, X, args.repeat)
        model.known_states = None
        reference = time_scoring(model, X, args.repeat)
        rows.append({"n_prompts": m, "stored_posterior_ms": round(stored, 2), "reference_ms": round(reference, 2),
                     "ratio": round(reference / stored, 2)})
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    print(json.dumps({"n_known_llms": len(model.llms), "rows": rows, "commit": commit,
                      "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                      "machine": f"{os.cpu_count()} cores, shared", "load_average": os.getloadavg()}, indent=1))


if __name__ == "__main__":
    main()
