"""Trust report on the latent posterior, evaluated on held-out test LLMs; prints JSON.

Per seed and split (the latent assessor of ``train.py assessor=latent``, fitted as in
``benchmarks/adaptive_onboarding.py`` and shared through its model cache), each test LLM is described
by its answers on ``--questions`` random training prompts (the random reference set of train.py).
Its report (:func:`posterior_trust`, default thresholds, never tuned on these LLMs) is compared with
what happened on the test prompts:

* a *failure* is a test LLM whose latent AUC falls below the "reference only" fallback's on its
  own answers, or whose realised accuracy lies outside the predicted 90% band;
* recall = failures flagged ``out of population`` or ``uncertain``; false alarms = flagged LLMs
  that did not fail, over flagged LLMs;
* coverage of the expected-AUC and accuracy bands; mean AUC with and without the fallback on the
  LLMs flagged out of population.

    nice python benchmarks/posterior_trust.py --seeds 0
    nice python benchmarks/posterior_trust.py --seeds 0 -- llm_split=frontier
    nice python benchmarks/posterior_trust.py --seeds 0 --degenerate   # the all-zero population

``--degenerate`` rebuilds the split from the shared data: the test LLMs are the strongest, the
training and validation LLMs the rest, and every validation LLM and all but the strongest
``--keep`` fraction of training LLMs have their results set to 0 (LLMs that failed every item).
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


def degenerate_prepare(keep: float) -> None:
    """Patch ``assessors.tasks.prepare.prepare`` to build the degenerate population (see the module docstring)."""
    import adaptive_onboarding

    import assessors.tasks.prepare as pipeline

    real = pipeline.prepare
    adaptive_onboarding.MODEL_CACHE = None  # the cache key does not know about the patch

    def prepare(cfg):
        prep = real(cfg)
        res = prep.results
        names = prep.llms["train"] + prep.llms["val"] + prep.llms["test"]
        order = sorted(names, key=lambda n: float(np.nanmean(res.success[res.llms.index(n)])))
        n_test, n_val = len(prep.llms["test"]), len(prep.llms["val"])
        rest = order[:-n_test]
        rng = np.random.default_rng(int(cfg.seed))
        val = sorted(rng.choice(rest, n_val, replace=False).tolist())
        train = [n for n in rest if n not in val]  # weakest first
        n_keep = int(round(keep * len(train)))
        for n in train[:len(train) - n_keep] + val:
            res.success[res.llms.index(n)] = np.where(np.isnan(res.success[res.llms.index(n)]), np.nan, 0.0)
        prep.llms = {"train": train, "val": val, "test": order[-n_test:]}
        return prep

    pipeline.prepare = prepare


def run_seed(seed: int, overrides: list[str], n_questions: int) -> dict:
    from adaptive_onboarding import fixed_selector, fitted

    from assessors.metrics import auc
    from assessors.trust.posterior_report import OK, OUT, fallback_predict, posterior_trust

    cfg, prep, model, _ = fitted(seed, overrides)
    X_pool, X_te = prep.X["train"], prep.X["test"]
    Y_pool, S_te = prep.S("test", "train"), prep.S("test", "test")
    idx = fixed_selector(cfg, "random", n_questions, prep)
    rows = []
    for k, llm in enumerate(prep.llms["test"]):
        y = Y_pool[k, idx].astype(float)
        rep = posterior_trust(model, X_pool[idx], y, X_te, llm=llm, seed=seed)
        obs = np.isfinite(S_te[k])
        s = S_te[k][obs]
        p, _ = model.predict_posterior(X_te, model.posterior(X_pool[idx], y[None, :]))
        a_latent = auc(s, p[0][obs])
        a_ref = auc(s, fallback_predict(model, X_pool[idx], y, X_te)[obs]) if np.isfinite(y).any() else np.nan
        real_acc = float(s.mean())
        acc_in = rep.accuracy_band[0] <= real_acc <= rep.accuracy_band[1]
        failure = (a_latent < a_ref) or not acc_in
        rows.append({"llm": llm, "verdict": rep.verdict, "flags": rep.flags, "failure": bool(failure),
                     "auc_latent": a_latent, "auc_reference_only": a_ref, "auc_in_band": bool(rep.auc_band[0] <= a_latent <= rep.auc_band[1]),
                     "accuracy_in_band": bool(acc_in), "expected_accuracy": rep.expected_accuracy, "realised_accuracy": real_acc,
                     "misfit_pvalue": rep.misfit_pvalue})
    fail = np.array([r["failure"] for r in rows])
    flagged = np.array([r["verdict"] != OK for r in rows])
    out_pop = np.array([r["verdict"] == OUT for r in rows])
    with_fb = [r["auc_reference_only"] if r["verdict"] == OUT else r["auc_latent"] for r in rows]
    return {
        "seed": seed, "n_test_llms": len(rows), "n_failures": int(fail.sum()), "n_flagged": int(flagged.sum()),
        "recall": float(flagged[fail].mean()) if fail.any() else None,
        "false_alarm_rate": float((~fail[flagged]).mean()) if flagged.any() else None,
        "auc_band_coverage": float(np.mean([r["auc_in_band"] for r in rows])),
        "accuracy_band_coverage": float(np.mean([r["accuracy_in_band"] for r in rows])),
        "mean_auc_latent": float(np.nanmean([r["auc_latent"] for r in rows])),
        "mean_auc_reference_only": float(np.nanmean([r["auc_reference_only"] for r in rows])),
        "mean_auc_with_fallback": float(np.nanmean(with_fb)),
        "flagged_out_of_population": int(out_pop.sum()),
        "llms": rows,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--questions", type=int, default=100)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--degenerate", action="store_true", help="most training and every validation LLM all-zero")
    ap.add_argument("--keep", type=float, default=0.2, help="with --degenerate: training LLMs kept (the strongest)")
    ap.add_argument("overrides", nargs="*")
    a = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if a.degenerate:
        degenerate_prepare(a.keep)
    runs = [run_seed(s, a.overrides, a.questions) for s in a.seeds]
    summary = {"overrides": a.overrides, "questions": a.questions, "degenerate": a.degenerate and {"keep": a.keep},
               "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                        text=True).stdout.strip(),
               "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": f"{os.cpu_count()} cores, shared",
               "runs": runs}
    text = json.dumps(summary, indent=1, default=str)
    if a.out:
        a.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
