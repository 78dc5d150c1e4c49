"""Which candidates of the specific assessor's grid earn their fit time; prints JSON.

For each seed of the default run (BBH+MuSR, random 56/14/30 instance and 50/10/18 LLM split,
MiniLM features), fits every candidate of a specific-assessor grid on each test LLM's
training instances and reports, per candidate, the summed fit time and the mean validation
and test AUC; then the mean test AUC of the specific assessor (best candidate by validation
AUC, per LLM) with the whole grid and with each candidate left out.

    python benchmarks/specific_grid.py --seeds 0 1 2 [--grid-overrides specific.classifiers.xgboost.param_grid.max_depth=[3,6]]
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import pandas as pd
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate
from sklearn.base import clone

ROOT = Path(__file__).resolve().parent.parent


def one_seed(seed: int, overrides: list[str]) -> pd.DataFrame:
    from assessors.metrics import auc
    from assessors.tasks.prepare import prepare

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("train", overrides=["tracking=none", f"seed={seed}", *overrides])
    prep = prepare(cfg)
    spec = instantiate(cfg.specific)
    part = {p: prep.results.instance_index(prep.inst[p]) for p in ("train", "val", "test")}
    rows = []
    for llm in prep.llms["test"]:
        y = prep.results.success[prep.results.llm_index([llm])[0]]
        for name, est in spec._candidates():
            t0 = time.perf_counter()
            fitted = clone(est).fit(prep.X["train"], y[part["train"]])
            fit_s = time.perf_counter() - t0
            score = {p: auc(y[part[p]], fitted.predict_proba(prep.X[p])[:, 1]) for p in ("val", "test")}
            rows.append({"seed": seed, "llm": llm, "candidate": name, "fit_s": fit_s, **score})
    return pd.DataFrame(rows)


def chosen_test_auc(df: pd.DataFrame) -> float:
    """Mean over LLMs of the test AUC of the candidate with the best validation AUC."""
    best = df.loc[df.groupby(["seed", "llm"])["val"].idxmax()]
    return float(best.groupby("seed")["test"].mean().mean())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--grid-overrides", nargs="*", default=["specific.classifiers.xgboost.param_grid.max_depth=[3,6]"],
                    help="Hydra overrides for the grid under test (default: the former depth-3/6 XGBoost grid)")
    a = ap.parse_args()
    df = pd.concat([one_seed(s, a.grid_overrides) for s in a.seeds], ignore_index=True)
    per = df.groupby("candidate").agg(fit_s=("fit_s", "sum"), val_auc=("val", "mean"), test_auc=("test", "mean"))
    wins = df.loc[df.groupby(["seed", "llm"])["val"].idxmax(), "candidate"].value_counts()
    out = {
        "seeds": a.seeds,
        "grid_overrides": a.grid_overrides,
        "per_candidate": {c: {"fit_s_total": round(r.fit_s, 1), "mean_val_auc": round(r.val_auc, 4),
                              "mean_test_auc": round(r.test_auc, 4), "chosen_for_llms": int(wins.get(c, 0))}
                          for c, r in per.iterrows()},
        "specific_test_auc_whole_grid": round(chosen_test_auc(df), 4),
        "specific_test_auc_without": {c: round(chosen_test_auc(df[df.candidate != c]), 4) for c in per.index},
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
