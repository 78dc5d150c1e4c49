"""Do the leaderboard rows line up with the prompt files? Prints JSON.

On BBH subtasks with a binary target (True/False, yes/no, valid/invalid), an LLM biased towards one
answer succeeds more often on items whose target is that answer, so its 0/1 row correlates with the
target label *only if the row is in the prompt files' item order*; a permuted row correlates at
chance level (about 1/sqrt(n) = 0.06). The check is run on the rows as the files name them
(``item_order=as_written``) and as the loader re-keys them (``item_order=detect``, the default).

Usage: python benchmarks/item_order_prompt_check.py
"""
import json

import numpy as np

from assessors.data.loaders.open_llm_leaderboard_v2 import load_open_llm_leaderboard_v2

SUBTASKS = {"bbh_boolean_expressions": "true", "bbh_sports_understanding": "yes", "bbh_navigate": "yes",
            "bbh_web_of_lies": "yes", "bbh_causal_judgement": "yes", "bbh_formal_fallacies": "valid"}


def target_corr(res):
    """Mean and 10th percentile of |corr(row, target label)| over non-constant rows, per subtask."""
    g = res.instances["subgroup"].to_numpy()
    tgt = res.instances["target"].astype(str).str.strip().str.lower().to_numpy()
    out = {}
    for sub, pos in SUBTASKS.items():
        cols = np.flatnonzero(g == sub)
        y = (tgt[cols] == pos).astype(float)
        c = np.array([abs(np.corrcoef(row, y)[0, 1]) for row in res.success[:, cols] if row.std() > 0])
        out[sub] = {"mean_abs_corr": round(float(c.mean()), 3), "p10_abs_corr": round(float(np.percentile(c, 10)), 3)}
    return out


def main():
    subs = list(SUBTASKS) + ["musr_*"]
    fixed = load_open_llm_leaderboard_v2(subtasks=subs)
    raw = load_open_llm_leaderboard_v2(subtasks=subs, item_order="as_written")
    ranks = {}
    for bench, rep in fixed.meta["item_order"]["benchmarks"].items():
        vals, counts = np.unique(list(rep["ranks"].values()), return_counts=True)
        ranks[bench] = {int(v): int(c) for v, c in zip(vals, counts)}
    print(json.dumps({"llms_as_written": len(raw.llms), "llms_detect": len(fixed.llms),
                      "excluded": fixed.meta["item_order"]["excluded"], "rows_per_process_count": ranks,
                      "as_written": target_corr(raw), "detect": target_corr(fixed)}, indent=1))


if __name__ == "__main__":
    main()
