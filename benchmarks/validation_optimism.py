"""How much better the latent assessor ranks the validation prompts than fresh ones; prints JSON.

``train.py assessor=latent`` early-stops (and recalibrates) the latent assessor on the validation
LLMs x validation prompts, and then chooses the posterior trust report's thresholds and band
widening on the same validation LLMs x validation prompts. If the validation prompts are ranked
better than prompts the fit never looked at, what the trust report is calibrated on is optimistic.
Per seed: mean AUC of the validation and of the test LLMs (each described by 100 random reference
answers, as served) on the validation and on the test prompts. A gap on the *prompts* that holds for
both sets of LLMs is the fit's choices on the validation prompts, not the LLMs. With
``trust.holdout_prompts`` the prompts held out of the fit for the trust policy (``trust``) are scored too.

    nice python benchmarks/validation_optimism.py --seeds 0 1 2
    nice python benchmarks/validation_optimism.py --seeds 0 1 2 -- data=score_matrix_musr

Models are cached as ``benchmarks/adaptive_onboarding.py`` caches them (``ADAPTIVE_BENCH_MODEL_CACHE``).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def run_seed(seed: int, overrides: list[str], n_questions: int) -> dict:
    from adaptive_onboarding import fixed_selector, fitted

    from assessors.metrics import masked_auc

    cfg, prep, model, _ = fitted(seed, overrides)
    idx = fixed_selector(cfg, "random", n_questions, prep)
    out = {"seed": seed, "n_prompts": {p: len(prep.inst[p]) for p in ("val", "test")},
           "n_llms": {p: len(prep.llms[p]) for p in ("val", "test")}}
    for llms in ("val", "test"):
        post = model.posterior(prep.X["train"][idx], prep.S(llms, "train")[:, idx])
        for part in [p for p in ("val", "trust", "test") if prep.inst.get(p)]:  # trust: trust.holdout_prompts
            p, _ = model.predict_posterior(prep.X[part], post)
            S = prep.S(llms, part)
            out[f"auc_{llms}_llms_on_{part}_prompts"] = float(np.nanmean([masked_auc(S[k], p[k]) for k in range(len(S))]))
        out[f"gap_{llms}_llms"] = out[f"auc_{llms}_llms_on_val_prompts"] - out[f"auc_{llms}_llms_on_test_prompts"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--questions", type=int, default=100, help="random reference answers per LLM")
    ap.add_argument("overrides", nargs="*", help="Hydra overrides of train.yaml (after --)")
    a = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    runs = [run_seed(s, a.overrides, a.questions) for s in a.seeds]
    print(json.dumps({
        "overrides": a.overrides, "runs": runs,
        "mean_gap": {k: float(np.mean([r[f"gap_{k}_llms"] for r in runs])) for k in ("val", "test")},
        "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                 text=True).stdout.strip(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": f"{os.cpu_count()} cores, shared"},
        indent=1))


if __name__ == "__main__":
    main()
