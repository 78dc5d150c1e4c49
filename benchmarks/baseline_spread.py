"""How much the "all train data" baseline moves with its trees' random draw alone; prints JSON.

``train.py`` compares the latent assessor with one fit of "all train data" per seed. On a held-out
subtask the boosted trees extrapolate, and their ranking depends on XGBoost's ``random_state`` (row
and column subsampling). This refits the baseline exactly as ``train.py`` does (the generic assessor
without reference vector, its grid chosen on the validation LLMs) with ``random_state`` 0 to
``draws - 1`` and prints each mean test AUC, per seed and as 3-seed means.

    python benchmarks/baseline_spread.py --seeds 0 1 2 -- split=ood_algorithmic
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import time

import numpy as np
from latent_quality import ROOT, compose


def seed_aucs(seed: int, draws: int, overrides: list[str]) -> list[float]:
    """Mean test AUC of "all train data" per random_state (``draws`` of them) on one seed's split."""
    from assessors.metrics import per_llm_auc
    from assessors.tasks.prepare import prepare
    from assessors.tasks.train import all_train_data_assessor

    prep, out = None, []
    for rs in range(draws):
        cfg = compose([f"seed={seed}", "tracking=none", "plots=false", f"classifier.estimator.random_state={rs}",
                       "classifier.estimator.n_jobs=1", *overrides])
        prep = prep or prepare(cfg)  # the split and features do not depend on the trees' draw
        base = all_train_data_assessor(cfg, threads=1)
        none = np.zeros((len(prep.llms["val"]), 0), np.float32)
        base.fit(prep.X["train"], prep.S("train", "train"), np.array([], dtype=int),
                 validation=(prep.X["val"], prep.S("val", "val"), none) if prep.llms["val"] else None)
        S_te = prep.S("test", "test")
        P = base.predict_proba(prep.X["test"], np.zeros((len(S_te), 0), np.float32))
        out.append(float(np.nanmean(per_llm_auc(S_te, P))))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--draws", type=int, default=5, help="random_state 0 .. draws-1")
    ap.add_argument("overrides", nargs="*")
    a = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    aucs = np.array([seed_aucs(s, a.draws, a.overrides) for s in a.seeds])  # (seeds, draws)
    print(json.dumps({
        "overrides": a.overrides, "seeds": a.seeds, "random_states": list(range(a.draws)),
        "auc": aucs.tolist(), "per_seed_sd": aucs.std(axis=1, ddof=1).tolist() if a.draws > 1 else None,
        "mean_over_seeds_per_draw": aucs.mean(axis=0).tolist(), "mean": float(aucs.mean()),
        "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                 text=True).stdout.strip(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": f"{os.cpu_count()} cores, shared",
    }, indent=1))


if __name__ == "__main__":
    main()
