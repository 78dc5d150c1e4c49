"""Time until ``features=static`` is ready: distilled on first use, loaded from the saved table after.

Usage::

    python benchmarks/static_first_use.py --model-dir /tmp/empty   # first use: distils
    python benchmarks/static_first_use.py --model-dir /tmp/empty   # again: loads the saved table

Prints one JSON object: import time, the time until the model is ready, the first encode, and
whether the table was there before. Run it under ``/usr/bin/time -v`` for CPU time and peak RSS.
"""
from __future__ import annotations

import argparse
import json
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model-dir", required=True, help="where the table is (or will be) saved")
    args = ap.parse_args()
    t0 = time.perf_counter()
    from assessors.features.static import DIGEST_FILE, StaticEmbeddingFeaturizer

    t1 = time.perf_counter()
    f = StaticEmbeddingFeaturizer(model_dir=args.model_dir)
    saved = (f._saved_path() / DIGEST_FILE).exists()
    f.model  # noqa: B018 - distils on first use, loads the saved table after
    t2 = time.perf_counter()
    X = f.transform(["What is 2 + 2?", "Is this a test?"])
    t3 = time.perf_counter()
    print(json.dumps({"table_was_saved": saved, "import_s": round(t1 - t0, 1), "model_ready_s": round(t2 - t1, 1),
                      "first_transform_s": round(t3 - t2, 3), "shape": list(X.shape),
                      "load_avg_1m": os.getloadavg()[0]}))


if __name__ == "__main__":
    main()
