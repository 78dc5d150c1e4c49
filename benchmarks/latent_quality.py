"""Quality, calibration, uncertainty and cost of the latent-ability assessor; prints JSON.

Runs the pipeline of ``python train.py assessor=latent <overrides>`` in-process per seed (same
splits, features and baselines as ``train.py``), then measures on the test LLMs:

* mean test AUC and ECE of every method (``generic`` is the configured assessor, here the latent one);
* coverage of the 90% posterior-predictive band of each test LLM's accuracy on the test prompts
  and on its reference set (a replicate of its reference answers);
* cost: fit time, posterior (registration) time per new LLM from its reference answers, and
  (LLM, prompt) pairs scored per second with cached features.

    python benchmarks/latent_quality.py --seeds 0 1 2                                  # default split
    python benchmarks/latent_quality.py --seeds 0 1 2 -- selector.size=30 compare.specific=false
    python benchmarks/latent_quality.py --seeds 0 1 2 -- llm_split=frontier
    python benchmarks/latent_quality.py --seeds 0 1 2 --assessor latent_stream -- compare.random_selector=false
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's package, not another installed copy


def compose(overrides: list[str]):
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        return hydra_compose("train", overrides=overrides)


def coverage(model, prep, ref_ids, level: float = 0.9) -> dict:
    """Fraction of test LLMs whose realised accuracy lies in the predicted ``level`` band."""
    import pandas as pd

    X_ref = prep.X["train"][pd.Index(prep.inst["train"]).get_indexer(ref_ids)]
    R = prep.results.matrix(prep.llms["test"], ref_ids)
    post = model.posterior(X_ref, R)
    S_te = prep.S("test", "test")
    out = {}
    for name, X, Y in (("test_prompts", prep.X["test"], S_te), ("reference_set", X_ref, R)):
        band = model.predictive_accuracy(X, post, level=level)
        real = np.nanmean(Y, axis=1)
        inside = (band["low"] <= real) & (real <= band["high"])
        out[name] = {"coverage": float(inside.mean()), "mean_width": float(np.mean(band["high"] - band["low"])),
                     "mae_expected_accuracy": float(np.mean(np.abs(band["mean"] - real)))}
    out["evidence"] = {k: int(v) for k, v in zip(*np.unique(post.evidence, return_counts=True))}
    if post.residual is not None:
        out["residual_on"] = int((post.residual.tau > 0).sum())
    return out


def cost(model, prep, ref_ids, repeats: int = 20) -> dict:
    """Posterior time per new LLM (its reference answers -> posterior) and scoring throughput."""
    import pandas as pd

    X_ref = prep.X["train"][pd.Index(prep.inst["train"]).get_indexer(ref_ids)]
    R = prep.results.matrix(prep.llms["test"], ref_ids)
    times = []
    for i in range(repeats):
        r = R[i % len(R)][None, :]
        t0 = time.perf_counter()
        model.posterior(X_ref, r)
        times.append(time.perf_counter() - t0)
    X = prep.X["test"]
    model.predict_proba(X[:10], R)  # warm-up
    t0 = time.perf_counter()
    model.predict_proba(X, R)
    dt = time.perf_counter() - t0
    return {"posterior_ms_median": 1000 * float(np.median(times)), "posterior_ms_max": 1000 * float(np.max(times)),
            "score_pairs": int(R.shape[0] * len(X)), "score_pairs_per_s": float(R.shape[0] * len(X) / dt)}


def fit_cost(cfg, prep) -> dict:
    """Wall and CPU seconds of one more fit of the assessor alone (CPU time is what a busy shared
    machine does not inflate: training runs on one torch thread)."""
    from assessors.tasks.prepare import fit_generic

    t0, c0 = time.perf_counter(), time.process_time()
    fit_generic(cfg, prep)
    return {"fit_wall_s": round(time.perf_counter() - t0, 1), "fit_cpu_s": round(time.process_time() - c0, 1)}


def run_seed(seed: int, overrides: list[str], time_fit: bool = False, assessor: str = "latent") -> dict:
    from assessors.tasks.prepare import prepare
    from assessors.tasks.train import predict_methods, score_methods

    cfg = compose([f"seed={seed}", f"assessor={assessor}", "tracking=none", "plots=false", *overrides])
    prep = prepare(cfg)
    preds, fitted = predict_methods(cfg, prep)
    long = score_methods(prep, preds)
    means = long.groupby(["metric", "method"])["value"].mean()
    model, ref_ids = fitted["generic"], fitted["reference_ids"]
    auc = long[long.metric == "auc"].pivot_table(index="llm", columns="method", values="value")
    extra = fit_cost(cfg, prep) if time_fit else {}
    return {**extra,
        "seed": seed,
        "mean_auc": {m: round(float(v), 4) for m, v in means["auc"].items()},
        "ece": {m: round(float(v), 4) for m, v in means["ece"].items()},
        "latent_wins_vs": {m: int((auc["generic"] > auc[m]).sum()) for m in auc.columns if m != "generic"},
        "n_test_llms": int(len(auc)),
        "fit_s": round(prep.timings.get("generic_fit_s", float("nan")), 2),
        "timings_s": {k: round(v, 2) for k, v in prep.timings.items()},
        "uncertainty": coverage(model, prep, ref_ids),
        "cost": cost(model, prep, ref_ids),
        "epochs": [(m["best_epoch"], m["epochs"]) for m in model.members_],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    ap.add_argument("--assessor", default="latent", help="the latent assessor's config: latent or latent_stream")
    ap.add_argument("--time-fit", action="store_true", help="time one more fit of the assessor alone (wall and CPU)")
    ap.add_argument("overrides", nargs="*", help="Hydra overrides (after --)")
    a = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import subprocess

    # the code this process runs: read before the (long) runs, not after them
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    runs = [run_seed(s, a.overrides, a.time_fit, a.assessor) for s in a.seeds]
    methods = runs[0]["mean_auc"].keys()
    summary = {
        "assessor": a.assessor,
        "overrides": a.overrides,
        "commit": commit,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{os.cpu_count()} cores, shared",
        "mean_over_seeds_auc": {m: round(float(np.mean([r["mean_auc"][m] for r in runs])), 4) for m in methods},
        "mean_over_seeds_ece": {m: round(float(np.mean([r["ece"][m] for r in runs])), 4) for m in methods},
        "runs": runs,
    }
    text = json.dumps(summary, indent=2, default=str)
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
