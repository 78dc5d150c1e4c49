"""Measured unit costs for the scaling-out cost model (docs/scaling.md); prints JSON.

- training: the paper's generic assessor (`assessor=paper_generic`: MiniLM + 100 random reference instances, XGBoost
  candidates chosen on validation LLMs) on the 429-LLM MuSR table (``data=score_matrix_musr``,
  the default 275/55/99 LLM split), trained on the first n of a seeded permutation of the 275
  training LLMs; seconds and peak RSS per (LLM, prompt) pair are the slopes of a least-squares
  line through the points (so fixed costs such as start-up do not count per pair). Each point
  also reports the mean test AUC on the same 99 test LLMs: does the assessor gain from more LLMs?
- embedding: MiniLM on real prompts with no cache, seconds per prompt.
Each point runs in a fresh subprocess so that its peak RSS is its own.

Usage: python benchmarks/scale_cost.py [--llms 50 100 200 275] [--prompts 256]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _cfg(overrides):
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        return compose("train", overrides=overrides)


def cpu_s() -> float:
    """CPU seconds of this process, all threads (robust to a loaded machine, unlike wall time)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def train_point(n_llms: int) -> dict:
    import numpy as np
    import psutil

    from assessors.tasks.grid import per_llm_auc
    from assessors.tasks.prepare import fit_generic, prepare

    cfg = _cfg(["data=score_matrix_musr", "assessor=paper_generic", "tracking=none", "~validate"])
    t0 = time.perf_counter()
    prep = prepare(cfg)  # embeddings come from the cache
    prep_s = time.perf_counter() - t0
    train = prep.llms["train"]
    if n_llms > len(train):
        raise SystemExit(f"--llms {n_llms}: the split has {len(train)} training LLMs")
    prep.llms["train"] = sorted(np.random.default_rng(0).permutation(train)[:n_llms].tolist())
    rss_prepared = psutil.Process().memory_info().rss
    t0, c0 = time.perf_counter(), cpu_s()
    assessor, ref_ids = fit_generic(cfg, prep)
    fit_s, fit_cpu = time.perf_counter() - t0, cpu_s() - c0
    test = prep.llms["test"]
    P = assessor.predict_proba(prep.X["test"], prep.results.matrix(test, ref_ids))
    pairs = len(prep.llms["train"]) * (len(prep.inst["train"]) - len(ref_ids))
    return {"n_train_llms": n_llms, "train_instances": len(prep.inst["train"]), "pairs": pairs,
            "prepare_s": prep_s, "fit_s": fit_s, "fit_cpu_s": fit_cpu, "rss_after_prepare_mb": rss_prepared / 2**20,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "test_llms": len(test), "test_auc_mean": float(per_llm_auc(prep.S("test", "test"), P, test).mean()),
            "classifier": assessor.classifier_name_}


def embed_point(n: int) -> dict:
    from hydra.utils import instantiate

    from assessors.data.loaders.open_llm_leaderboard_v2 import load_open_llm_leaderboard_v2

    out = {}
    for name, subtasks in (("musr", ["musr_*"]), ("bbh", ["bbh_*"])):
        res = load_open_llm_leaderboard_v2(subtasks=subtasks)
        prompts = res.prompts(res.instance_ids[:: max(1, len(res.instance_ids) // n)][:n])
        feat = instantiate(_cfg([]).features, cache_dir=None, show_progress=False)
        feat.fit(prompts[:1])
        t0, c0 = time.perf_counter(), cpu_s()
        feat.transform(prompts)
        out[name] = {"prompts": len(prompts), "s_per_prompt": (time.perf_counter() - t0) / len(prompts),
                     "cpu_s_per_prompt": (cpu_s() - c0) / len(prompts),
                     "mean_chars": sum(map(len, prompts)) / len(prompts)}
    return out


def slope(xs, ys) -> float | None:
    """Least-squares slope; None with fewer than two distinct x."""
    import numpy as np

    if len(set(xs)) < 2:
        return None
    return float(np.polyfit(np.asarray(xs, float), np.asarray(ys, float), 1)[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--llms", type=int, nargs="+", default=[50, 100, 200, 275])
    ap.add_argument("--prompts", type=int, default=256)
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        kind, n = a.child[0], int(a.child[1])
        print(json.dumps(train_point(n) if kind == "train" else embed_point(n)))
        return

    def child(kind, n):
        r = subprocess.run([sys.executable, __file__, "--child", kind, str(n)], capture_output=True, text=True,
                           cwd=ROOT)
        if r.returncode:
            sys.exit(r.stderr[-3000:])
        row = json.loads(r.stdout.strip().splitlines()[-1])
        print(json.dumps(row), file=sys.stderr, flush=True)
        return row

    points = [child("train", n) for n in a.llms]
    pairs = [p["pairs"] for p in points]
    emb = child("embed", a.prompts)
    print(json.dumps({
        "training_points": points,
        "training_s_per_pair": slope(pairs, [p["fit_s"] for p in points]),
        "training_cpu_s_per_pair": slope(pairs, [p["fit_cpu_s"] for p in points]),
        "training_peak_bytes_per_pair": slope(pairs, [p["peak_rss_mb"] * 2**20 for p in points]),
        "embedding": emb,
        "note": "2-core shared machine; slopes over the points; wall time depends on the load, CPU time less so",
        "load_average_1min": os.getloadavg()[0],
    }, indent=1))


if __name__ == "__main__":
    main()
