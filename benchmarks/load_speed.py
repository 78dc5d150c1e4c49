"""CPU time of loading the default data (Open LLM Leaderboard v2, BBH + MuSR) with and without the item-order
detection, in the package of a given checkout (compare two commits by alternating ``--repo``); prints JSON.

    python benchmarks/load_speed.py --repeats 3 [--repo /path/to/other/checkout]

Needs ``ASSESSORS_DATA_DIR`` (the shared data). The detection's share is ``detect`` minus ``as_written``.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import sys
import time
from pathlib import Path


def cpu_of(load, repeats: int, **kwargs) -> tuple[list[float], object]:
    """CPU seconds of each of ``repeats`` calls ``load(**kwargs)``, and the last result."""
    times, out = [], None
    for _ in range(repeats):
        c0 = time.process_time()
        out = load(**kwargs)
        times.append(round(time.process_time() - c0, 3))
    return times, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--repo", default=str(Path(__file__).resolve().parent.parent),
                    help="the checkout whose package is timed (default: this one)")
    a = ap.parse_args()
    sys.path.insert(0, a.repo)
    from assessors.data.loaders.open_llm_leaderboard_v2 import load_open_llm_leaderboard_v2

    logging.disable(logging.WARNING)  # the loader's data warnings
    kw = {"root": os.environ["ASSESSORS_DATA_DIR"], "subtasks": ["bbh_*", "musr_*"]}
    out = {"repo": a.repo, "load_1min_before": os.getloadavg()[0]}
    detect, res = cpu_of(load_open_llm_leaderboard_v2, a.repeats, item_order="detect", **kw)
    written, _ = cpu_of(load_open_llm_leaderboard_v2, a.repeats, item_order="as_written", **kw)
    out.update(detect_cpu_s=detect, as_written_cpu_s=written, shape=list(res.success.shape),
               success_md5=hashlib.md5(res.success.tobytes()).hexdigest(),
               load_1min_after=os.getloadavg()[0])
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
