"""Load-time checks on one :class:`Results` that report offenders and leave the data in place.

Called by :func:`assessors.data.validate.check_results`, which records each offender list through
its ``add(check, items, message)`` callback (as :mod:`assessors.data.block_checks` does). ``o`` is
the validation options (``assessors.data.validate.DEFAULTS``).
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from assessors.data.block_checks import dataset_blocks
from assessors.data.names import case_variants
from assessors.data.results import Results


def constant_checks(results: Results, groups: pd.Series, o: dict, add) -> None:
    """``constant_llm``: (LLM, dataset) pairs with constant success; ``constant_dataset``: datasets
    where every answered cell has the same success (a grading failure?)."""
    n, S = o["max_names"], results.success
    const_llm, const_ds = [], []
    for g, answered, wins, _, const, vals in dataset_blocks(S, groups, o["min_cells"]):
        const_llm += [(results.llms[i], g, int(wins[i] > 0), int(answered[i])) for i in np.flatnonzero(const)]
        if vals.size >= o["min_cells"] and np.unique(vals).size == 1:
            const_ds.append((g, int(vals[0]), int(vals.size)))
    if const_llm:
        add("constant_llm", const_llm, f"{len(const_llm)} (LLM, dataset) pairs with constant success, e.g. "
            + ", ".join(f"{m} on {g} = {v} ({c} items)" for m, g, v, c in const_llm[:n]))
    if const_ds:
        add("constant_dataset", const_ds, f"{len(const_ds)} dataset(s) where every LLM has the same success "
            "(a grading failure?): " + ", ".join(f"{g} = {v} on all {c} cells" for g, v, c in const_ds[:n]))


def duplicate_llm_checks(results: Results, o: dict, add) -> None:
    """``conflicting_duplicates``: one LLM listed twice with different results (kept as ``name#k``);
    ``identical_llms``: differently named LLMs with identical, non-constant result rows."""
    n, S = o["max_names"], results.success
    base: dict[str, list] = {}
    for m in results.llms:
        base.setdefault(re.sub(r"#\d+$", "", m), []).append(m)
    conflicts = [tuple(v) for v in base.values() if len(v) > 1]
    if conflicts:
        add("conflicting_duplicates", conflicts, f"{len(conflicts)} LLM name(s) listed with conflicting results "
            "(kept as name#k, one of them is probably a re-run): " + ", ".join("/".join(c) for c in conflicts[:n]))

    answered = ~np.isnan(S)
    keyed: dict[bytes, list] = {}
    total = np.nansum(S, 1)
    # constant rows (all 0 / all 1) are equal to each other trivially and already reported as constant_llm
    varied = (total > 0) & (total < answered.sum(1))
    for i in np.flatnonzero((answered.sum(1) >= o["identical_min_cells"]) & varied):
        keyed.setdefault(np.where(answered[i], S[i], -1).tobytes(), []).append(results.llms[i])
    same = [tuple(v) for v in keyed.values() if len(v) > 1]
    if same:
        add("identical_llms", same, f"{len(same)} group(s) of differently named LLMs with identical results "
            "(same model twice? it leaks across an LLM split): " + ", ".join(" = ".join(s) for s in same[:n]))


def missing_checks(results: Results, o: dict, add) -> None:
    """``missing_llm`` / ``missing_instance``: rows or columns with too many missing cells."""
    n = o["max_names"]
    answered = ~np.isnan(results.success)
    miss_l = 1 - answered.mean(1)
    bad_l = [(results.llms[i], round(float(miss_l[i]), 3)) for i in np.flatnonzero(miss_l > o["max_missing_llm"])]
    if bad_l:
        add("missing_llm", bad_l, f"{len(bad_l)} LLM(s) with more than {o['max_missing_llm']:.0%} missing cells: "
            + ", ".join(f"{m} ({f:.0%})" for m, f in bad_l[:n]))
    miss_i = 1 - answered.mean(0)
    ids = results.instance_ids
    bad_i = [(ids[j], round(float(miss_i[j]), 3)) for j in np.flatnonzero(miss_i > o["max_missing_instance"])]
    if bad_i:
        add("missing_instance", bad_i, f"{len(bad_i)} instance(s) with more than {o['max_missing_instance']:.0%} "
            "missing cells, e.g. " + ", ".join(f"{i} ({f:.0%})" for i, f in bad_i[:n]))


def duplicate_prompt_check(results: Results, o: dict, add) -> None:
    """``duplicate_prompts``: one prompt text under several instance ids."""
    prompts = results.instances["prompt"].dropna().astype(str)
    dup = prompts[prompts.duplicated(keep=False)]
    if len(dup):
        grp = [tuple(v) for v in dup.groupby(dup).groups.values()]
        add("duplicate_prompts", [tuple(map(str, g)) for g in grp], f"{len(grp)} prompt text(s) shared by "
            f"{len(dup)} instance ids (they can land on both sides of a split), e.g. "
            + ", ".join("/".join(map(str, g[:3])) for g in grp[:o["max_names"]]))


def case_variant_check(results: Results, o: dict, add) -> None:
    """``case_variants``: LLM names, subgroups or instance ids that differ only by case (one thing
    spelled two ways, or two things?); they stay distinct, the warning names them."""
    groups = [("LLM", g) for g in case_variants(results.llms)]
    groups += [("subgroup", g) for g in case_variants(results.instances["subgroup"].dropna().unique())]
    groups += [("instance id", g) for g in case_variants(results.instance_ids)]
    if groups:
        add("case_variants", [(kind, *g) for kind, g in groups], f"{len(groups)} group(s) of names that differ only "
            "by case (kept as different names; rename one if they are the same): "
            + ", ".join(f"{kind}s {' / '.join(map(repr, g))}" for kind, g in groups[:o["max_names"]]))
