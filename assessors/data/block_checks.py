"""Checks that name *blocks* of the data (datasets, LLMs, instances) a run leaves out by default.

Called by :func:`assessors.data.validate.check_results`, which records each offender list through
its ``add(check, items, message)`` callback; :mod:`assessors.data.exclusion` removes the blocks.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from assessors.data.results import Results


def dataset_blocks(S: np.ndarray, groups: pd.Series, min_cells: int):
    """Per dataset (subgroup), in name order: ``(name, answered, wins, rated, constant, values)``.

    ``answered`` and ``wins`` count each LLM's answered and successful cells (n_llms,); ``rated``
    marks LLMs with at least ``min_cells`` answered, ``constant`` the rated ones whose success is
    constant; ``values`` are the dataset's answered cells, flattened.
    """
    for g, cols in groups.groupby(groups, sort=True).indices.items():
        block = S[:, cols]
        answered = (~np.isnan(block)).sum(1)
        wins = np.nansum(block, 1)
        rated = answered >= min_cells
        yield g, answered, wins, rated, rated & ((wins == 0) | (wins == answered)), block[~np.isnan(block)]


def block_checks(results: Results, groups: pd.Series, o: dict, add) -> None:
    """Mostly constant datasets, LLMs and datasets with too few answered cells."""
    n, S = o["max_names"], results.success
    mostly, few_ds = [], []
    for g, _, _, rated, const, vals in dataset_blocks(S, groups, o["min_cells"]):
        if vals.size < o["min_dataset_cells"]:
            few_ds.append((g, int(vals.size)))
        elif rated.sum() >= 2 and const.sum() >= o["constant_share"] * rated.sum() and np.unique(vals).size > 1:
            # (perfectly constant datasets are the constant_dataset check's)
            mostly.append((g, int(const.sum()), int(rated.sum()), round(float(vals.mean()), 4)))
    if mostly:
        add("mostly_constant_dataset", mostly, f"{len(mostly)} dataset(s) where at least {o['constant_share']:.0%} of "
            "the LLMs have constant success (a grading failure?): "
            + ", ".join(f"{g} ({c} of {r} LLMs constant, mean success {m:.3f})" for g, c, r, m in mostly[:n]))
    if few_ds:
        add("few_cells_dataset", few_ds, f"{len(few_ds)} dataset(s) with fewer than {o['min_dataset_cells']} answered "
            "cells: " + ", ".join(f"{g} ({c} cells)" for g, c in few_ds[:n]))
    item_order_check(results, add)
    answered = (~np.isnan(S)).sum(1)
    few_llm = [(results.llms[i], int(answered[i])) for i in np.flatnonzero(answered < o["min_llm_cells"])]
    if few_llm:
        add("few_cells_llm", few_llm, f"{len(few_llm)} LLM(s) with fewer than {o['min_llm_cells']} answered cells: "
            + ", ".join(f"{m} ({c} cells)" for m, c in few_llm[:n]))


def missing_prompt_check(results: Results, groups: pd.Series, add) -> list[str]:
    """Instances without prompt text, named by dataset (with the expected prompt file when known)."""
    missing = results.instances["prompt"].isna().to_numpy()
    if not missing.any():
        return []
    files = results.meta.get("missing_prompt_files", {})
    per = groups[missing].value_counts(sort=False)
    total = groups.value_counts()
    items = [(g, int(c), int(total[g])) for g, c in per.items()]
    add("missing_prompt", items, f"{int(missing.sum())} instance(s) without prompt text, in {len(items)} dataset(s): "
        + ", ".join(f"{g} ({c} of {t}" + (f"; no file {files[g]}" if g in files else "") + ")"
                    for g, c, t in items[:10]))
    return results.instances.index[missing].tolist()


def blank_prompt_check(results: Results, add) -> list[str]:
    """Instances whose prompt is empty or only white space, named by id (embedded, they would all be
    one meaningless point in feature space); returns their ids."""
    from assessors.data.prompts import empty_prompts

    prompts = results.instances["prompt"]
    blank = prompts.notna().to_numpy() & empty_prompts(prompts)
    if not blank.any():
        return []
    ids = results.instances.index[blank].tolist()
    add("blank_prompt", ids, f"{len(ids)} instance(s) whose prompt is empty or only white space: "
        + ", ".join(map(repr, ids[:10])))
    return ids


def item_order_check(results: Results, add) -> None:
    """LLMs the loader dropped because their rows' item order could not be told from the data."""
    report = results.meta.get("item_order") or {}
    gone = report.get("excluded", {})
    if gone:
        add("item_order_undetermined", sorted(gone), f"{len(gone)} LLM(s) left out at load time because the item "
            "order of their rows cannot be told from the data (see assessors.data.item_order): "
            + ", ".join(f"{m} ({why})" for m, why in sorted(gone.items())))
