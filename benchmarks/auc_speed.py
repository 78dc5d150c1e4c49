"""CPU time of one ``assessors.metrics.auc`` call against ``sklearn.metrics.roc_auc_score`` (what it called
before), on the shapes of the per-LLM assessors' choice: CV folds of ~33 reference answers ("reference only",
324 calls a run) and validation sets of a few hundred prompts ("specific", 108 calls); prints JSON.

    python benchmarks/auc_speed.py --repeats 300
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.metrics import roc_auc_score

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

from assessors.metrics import auc  # noqa: E402


def cpu_per_call(fn, pairs, repeats: int) -> float:
    """Mean CPU seconds of ``fn(y, p)`` over ``repeats`` passes through ``pairs``."""
    c0 = time.process_time()
    for _ in range(repeats):
        for y, p in pairs:
            fn(y, p)
    return (time.process_time() - c0) / (repeats * len(pairs))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=300)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    out = {"load_1min_before": os.getloadavg()[0], "sizes": {}}
    for n in (33, 300, 2000):
        pairs = []
        for _ in range(10):
            p = rng.random(n).astype(np.float32)
            y = (rng.random(n) < p).astype(float)
            y[:2] = [0.0, 1.0]
            pairs.append((y, p))
        assert all(auc(y, p) == roc_auc_score(y, p) for y, p in pairs)
        old, new = cpu_per_call(roc_auc_score, pairs, a.repeats), cpu_per_call(auc, pairs, a.repeats)
        out["sizes"][n] = {"roc_auc_score_ms": round(old * 1e3, 3), "auc_ms": round(new * 1e3, 3),
                           "ratio": round(new / old, 3)}
    out["load_1min_after"] = os.getloadavg()[0]
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
