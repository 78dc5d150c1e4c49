"""Which candidates of the specific assessor's grid validation picks, on validation LLMs; prints JSON.

For each seed of the default run, every validation LLM is treated as a target LLM is by ``train.py``
(never a test LLM): "specific" fits each candidate of ``conf/assessor/specific.yaml``'s grids on the LLM's
training prompts and picks by AUC on its validation prompts; "reference only" picks by 3-fold CV on its
answers to the seed's reference prompts. Prints, per candidate, how often it is picked and its summed fit
time (wall, one process: a ratio on shared cores).

    python benchmarks/specific_picks.py --seeds 0 1 2
"""
from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path

import numpy as np
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate
from sklearn.base import clone

ROOT = Path(__file__).resolve().parent.parent


def one_seed(seed: int) -> dict:
    from assessors.core.specific import LLMClassifier
    from assessors.metrics import auc
    from assessors.tasks.prepare import fit_selector, prepare

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("train", overrides=["tracking=none", f"seed={seed}"])
    prep = prepare(cfg)
    spec = instantiate(cfg.specific)
    ref_ids = fit_selector(instantiate(cfg.selector), prep).reference_ids_
    part = {p: prep.results.instance_index(prep.inst[p]) for p in ("train", "val")}
    ref_pos = prep.results.instance_index(ref_ids)
    X_ref = prep.X["train"][[prep.inst["train"].index(i) for i in ref_ids]]
    picks = {"specific": Counter(), "reference_only": Counter()}
    fit_s, val_auc = Counter(), {}
    for llm in prep.llms["val"]:
        row = prep.results.success[prep.results.llm_index([llm])[0]]
        y_tr, y_val = row[part["train"]], row[part["val"]]
        keep, keep_val = ~np.isnan(y_tr), ~np.isnan(y_val)
        for name, est in spec._candidates():
            t0 = time.perf_counter()
            fitted = clone(est).fit(prep.X["train"][keep], y_tr[keep])
            fit_s[name] += time.perf_counter() - t0
            val_auc.setdefault(name, []).append(auc(y_val[keep_val], fitted.predict_proba(prep.X["val"][keep_val])[:, 1]))
        one = LLMClassifier(spec.classifiers, cv=spec.cv, seed=spec.seed)
        names = [n for n, _ in spec._candidates()]
        best = names[int(np.nanargmax([val_auc[n][-1] for n in names]))]
        picks["specific"][best] += 1
        picks["reference_only"][one.fit(X_ref, row[ref_pos]).classifier_name_] += 1
    return {"seed": seed, "n_llms": len(prep.llms["val"]),
            "picked": {k: dict(v) for k, v in picks.items()},
            "fit_s": {k: round(v, 1) for k, v in fit_s.items()},
            "mean_val_auc": {k: round(float(np.nanmean(v)), 4) for k, v in val_auc.items()}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    a = ap.parse_args()
    for s in a.seeds:
        print(json.dumps(one_seed(s)), flush=True)


if __name__ == "__main__":
    main()
