"""How much of the latent assessor's ECE is sampling noise, and how much its level; prints JSON.

Per seed, the pipeline of ``python train.py assessor=latent`` (default split), then for each test LLM
on the test prompts:

* ``ece``: the assessor's ECE (``assessors.metrics.ece``, 10 bins), as ``latent_quality.py`` reports it;
* ``calibrated_floor``: the mean ECE of the same predictions against outcomes drawn from the
  predictions themselves (50 draws): what a perfectly calibrated predictor shows on these prompts;
* ``level_corrected``: the ECE after one logit shift per LLM that makes its mean prediction equal its
  realised accuracy (an oracle: it reads the test answers), i.e. with the level error removed.

    python benchmarks/latent_ece_floor.py --seeds 0 1 2 [-- <overrides>]
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

from benchmarks.latent_quality import compose  # noqa: E402


def level_shift(p: np.ndarray, target: float) -> np.ndarray:
    """``p`` shifted by one logit constant (root found by Brent's method) so that its mean is ``target``."""
    from scipy.optimize import brentq

    from assessors.irt_math import sigmoid

    z = np.log(p) - np.log1p(-p)
    c = brentq(lambda c: sigmoid(z + c).mean() - target, -20.0, 20.0)
    return sigmoid(z + c)


def one_seed(seed: int, overrides: list[str]) -> dict:
    from hydra.utils import instantiate

    from assessors.metrics import ece
    from assessors.tasks.prepare import fit_selector, prepare

    cfg = compose([f"seed={seed}", "assessor=latent", "tracking=none", "plots=false", *overrides])
    prep = prepare(cfg)
    sel = fit_selector(instantiate(cfg.selector), prep)
    ref_ids = sel.reference_ids_
    model = instantiate(cfg.assessor).fit(prep.X["train"], prep.S("train", "train"),
                                          np.asarray(sel.reference_index_), validation=prep.validation(ref_ids))
    P = model.predict_proba(prep.X["test"], prep.results.matrix(prep.llms["test"], ref_ids))
    rng = np.random.default_rng(seed)
    rows = []
    for y, p in zip(prep.S("test", "test"), P):
        k = np.isfinite(y)
        y, p = y[k], np.clip(p[k].astype(np.float64), 1e-6, 1 - 1e-6)
        floor = np.mean([ece((rng.random(len(p)) < p).astype(float), p) for _ in range(50)])
        rows.append((ece(y, p), floor, ece(y, level_shift(p, y.mean())) if 0 < y.mean() < 1 else np.nan))
    m = np.nanmean(rows, 0)
    return {"seed": seed, "ece": round(m[0], 4), "calibrated_floor": round(m[1], 4), "level_corrected": round(m[2], 4)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("overrides", nargs="*", help="Hydra overrides of train.yaml (after --)")
    a = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    runs = [one_seed(s, a.overrides) for s in a.seeds]
    mean = {k: round(float(np.mean([r[k] for r in runs])), 4) for k in ("ece", "calibrated_floor", "level_corrected")}
    print(json.dumps({"overrides": a.overrides, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                      "machine": f"{os.cpu_count()} cores, shared", "mean": mean, "runs": runs}, indent=2))


if __name__ == "__main__":
    main()
