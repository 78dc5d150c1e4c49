"""Do the Open LLM Leaderboard v2 CSV rows share one item order? Prints JSON.

The 429-LLM ``musr.npz`` and the 78-LLM leaderboard CSVs give the same items' results from two
independent conversions. Within a subtask, an LLM's 0/1 row correlates with the other LLMs'
per-item accuracy when both are in the same item order, and not at all when its row is permuted.
For each CSV LLM this prints its correlation with the npz per-item accuracy on each MuSR subtask,
splits the LLMs into those in the npz order (correlation > 0.15 on some subtask) and the rest,
then checks on every BBH subtask (no second source there) whether the second group agrees with
the first: mean within-group and cross-group correlation with each group's per-item accuracy.

Rows are read as written (``item_order=as_written``): this shows the problem the loaders now repair
(docs/item_order.md).

Usage: python benchmarks/item_order_check.py
"""
from __future__ import annotations

import json

import numpy as np

from assessors.data.loaders.open_llm_leaderboard_v2 import load_open_llm_leaderboard_v2
from assessors.data.loaders.score_matrix import load_score_matrix


def corr(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.corrcoef(a, b)[0, 1]) if a.std() > 0 and b.std() > 0 else float("nan")


def main() -> None:
    csv = load_open_llm_leaderboard_v2(subtasks=["bbh_*", "musr_*"], prompts=False, item_order="as_written")
    npz = load_score_matrix("musr", item_order="as_written",
                            items=load_open_llm_leaderboard_v2(subtasks=["musr_*"], prompts=False, item_order="as_written"))
    groups = csv.instances["subgroup"]
    musr = {}
    for sub in sorted(groups[groups.str.startswith("musr_")].unique()):
        cols = np.flatnonzero(groups.to_numpy() == sub)
        p = npz.success[:, npz.instance_index([csv.instance_ids[c] for c in cols])].mean(0)
        musr[sub] = [corr(csv.success[k, cols], p) for k in range(len(csv.llms))]
    best = np.nanmax(np.array(list(musr.values())), axis=0)
    in_order = [m for m, b in zip(csv.llms, best) if b > 0.15]
    other = [m for m, b in zip(csv.llms, best) if not b > 0.15]
    a, b = csv.llm_index(in_order), csv.llm_index(other)
    bbh = {}
    for sub in sorted(groups[groups.str.startswith("bbh_")].unique()):
        cols = np.flatnonzero(groups.to_numpy() == sub)
        S = csv.success[:, cols]
        pa, pb = S[a].mean(0), S[b].mean(0)
        bbh[sub] = {"in_order_vs_in_order": np.nanmean([corr(S[k], pa) for k in a]),
                    "other_vs_in_order": np.nanmean([corr(S[k], pa) for k in b]),
                    "other_vs_other": np.nanmean([corr(S[k], pb) for k in b])}
    print(json.dumps({
        "csv_llms": len(csv.llms), "in_npz_order": len(in_order), "other_order": len(other),
        "other_order_llms": other,
        "musr_corr_with_npz_accuracy_quantiles": np.round(np.quantile(best, [0, 0.25, 0.5, 0.75, 1]), 3).tolist(),
        "bbh_mean_over_subtasks": {k: round(float(np.mean([v[k] for v in bbh.values()])), 3)
                                   for k in next(iter(bbh.values()))},
        "bbh_per_subtask": {s: {k: round(float(x), 3) for k, x in v.items()} for s, v in bbh.items()},
        "note": "same-group correlations include the LLM itself in its group's mean for 'in_order' and 'other'",
    }, indent=1))


if __name__ == "__main__":
    main()
