"""The latent assessor given more of a test LLM's answers than its reference set; prints JSON.

``python train.py`` describes each test LLM by its 100 reference answers, while the specific assessor
is fitted on all of the LLM's training answers and chooses its classifier on its validation answers.
Per seed this fits the latent assessor as ``train.py`` does and scores the test LLMs' test prompts from
three kinds of evidence: the reference answers, every training answer, and every training and validation
answer (the specific assessor's data); and the specific assessor beside them (mean test AUC each).

    python benchmarks/served_evidence.py --seeds 0 1 2 -- data=openai_evals llm_split=kor
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from hydra import compose, initialize_config_dir

ROOT = Path(__file__).resolve().parent.parent


def one_seed(seed: int, overrides: list[str]) -> dict:
    from assessors.core.evidence import Evidence
    from assessors.tasks.prepare import prepare
    from assessors.tasks.train import baseline_columns, predict_generic, score_methods, select_reference

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("train", overrides=[*overrides, f"seed={seed}", "tracking=none", "compare.random_selector=false"])
    prep = prepare(cfg)
    selector = select_reference(cfg, prep)
    preds, fitted = predict_generic(cfg, prep, selector)
    model = fitted["generic"]
    pos = {part: prep.results.instance_index(prep.inst[part]) for part in ("train", "val")}
    X_all = np.vstack([prep.X["train"], prep.X["val"]])
    P = {"reference": preds["generic"], "training answers": [], "training and validation answers": []}
    for llm in prep.llms["test"]:
        row = prep.results.success[prep.results.llm_index([llm])[0]]
        P["training answers"].append(model.predict_state(prep.X["test"], model.describe(
            Evidence(prep.X["train"], row[pos["train"]])))[0])
        P["training and validation answers"].append(model.predict_state(prep.X["test"], model.describe(
            Evidence(X_all, np.concatenate([row[pos["train"]], row[pos["val"]]]))))[0])
    P = {name: np.asarray(p) for name, p in P.items()}
    # the specific column exactly as train.py builds it
    only_specific = {m: m == "specific" for m in ("paper_generic", "specific", "reference_only", "all_train_data")}
    cfg.compare.update(only_specific)
    P.update(task() for task in baseline_columns(cfg, prep, selector.reference_ids_))
    auc = score_methods(prep, P).query("metric == 'auc'").groupby("method", sort=False)["value"].mean()
    return {"seed": seed, "n_test_llms": len(prep.llms["test"]), "mean_auc": auc.round(4).to_dict()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("overrides", nargs="*", help="train.py overrides after --")
    args = ap.parse_args()
    runs = [one_seed(seed, args.overrides) for seed in args.seeds]
    names = runs[0]["mean_auc"]
    print(json.dumps({"overrides": args.overrides, "runs": runs,
                      "mean_over_seeds": {n: round(float(np.mean([r["mean_auc"][n] for r in runs])), 4) for n in names}},
                     indent=2))


if __name__ == "__main__":
    main()
