"""Few-shot prompt variants for confidence profiles: K demonstration draws per dataset.

The label-free estimator needs several confidence profiles per dataset. A *variant* fixes one
random draw of ``shots`` demonstrations per subgroup (taken from items that are never
evaluated) and prepends them, as earlier chat turns, to every evaluated item of that subgroup.

``python train.py experiment=variants`` writes ``<out>/v0.jsonl`` ... (:mod:`assessors.tasks.variants`).
Each file is a prompts table for ``python predict.py mode=onboard onboard.prompts=[<out>/v0.jsonl]``;
:func:`combine` stacks the onboarding outputs into one long table (``llm = <name>#v<k>``).
"""
from __future__ import annotations

import json
import logging
import zlib
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from assessors.data.columns import require_columns
from assessors.errors import ConfigError, DataError

log = logging.getLogger(__name__)


def split_chat_prompt(prompt: str) -> tuple[str | None, str]:
    """Split an openai_evals rendering ``"system: S\\nuser: U"`` into ``(S, U)``; else ``(None, prompt)``."""
    if prompt.startswith("system: ") and "\nuser: " in prompt:
        system, user = prompt[len("system: "):].split("\nuser: ", 1)
        if "\nassistant: " not in user:  # multi-turn renderings are kept as plain text
            return system.strip(), user.strip()
    return None, prompt


def few_shot_variants(prompts: pd.DataFrame, k: int = 3, shots: int = 1, limit: int | None = None,
                      seed: int = 0) -> list[pd.DataFrame]:
    """Build ``k`` prompt tables that differ only in their demonstration draw.

    Parameters
    ----------
    prompts : DataFrame
        Columns ``instance_id, prompt, target, subgroup`` (optional ``system_prompt``).
    k : int
        Number of variants (profiles per dataset).
    shots : int
        Demonstrations per variant; 0 gives ``k`` identical zero-shot tables.
    limit : int, optional
        Evaluated items per subgroup (its first ``limit`` rows). The remaining rows are the
        demonstration pool, so a demonstration is never an evaluated item.
    seed : int
        Variant ``v`` of subgroup ``g`` draws with ``default_rng([seed, v, crc32(g)])``.

    Returns
    -------
    list of DataFrame
        ``k`` tables with the evaluated rows and a ``shots`` column (JSON list of [prompt, answer]).
    """
    require_columns(prompts, ("instance_id", "prompt", "target", "subgroup"), "prompts")
    if k < 1 or shots < 0:
        raise ConfigError(f"few_shot_variants: need k >= 1 and shots >= 0, got k={k}, shots={shots}")
    out: list[list[pd.DataFrame]] = [[] for _ in range(k)]
    for group, rows in prompts.groupby("subgroup", sort=False):
        rows = rows.reset_index(drop=True)
        n_eval = len(rows) if limit is None else min(int(limit), len(rows))
        pool = rows.iloc[n_eval:]
        if shots and len(pool) < shots:
            raise DataError(f"subgroup {group!r}: {len(rows)} items leave {len(pool)} for demonstrations, "
                            f"fewer than shots={shots}; lower --limit")
        evaluated = rows.iloc[:n_eval]
        for v in range(k):
            rng = np.random.default_rng([seed, v, zlib.crc32(str(group).encode())])
            demo = pool.iloc[np.sort(rng.choice(len(pool), size=shots, replace=False))] if shots else pool.iloc[:0]
            pairs = json.dumps([[str(p), str(t)] for p, t in zip(demo["prompt"], demo["target"])])
            out[v].append(evaluated.assign(shots=pairs))
    return [pd.concat(parts, ignore_index=True) for parts in out]


def combine(out_dirs: Sequence[str | Path], names: Sequence[str]) -> pd.DataFrame:
    """Stack onboarding outputs (``<dir>/results``) into one long table.

    Returns
    -------
    DataFrame
        Columns ``llm, instance_id, subgroup, success, confidence``; only graded cells.
    """
    from assessors.data.results import Results

    if len(out_dirs) != len(names):
        raise ConfigError(f"combine: {len(out_dirs)} directories but {len(names)} names")
    frames = []
    for d, name in zip(out_dirs, names):
        res = Results.from_parquet(Path(d) / "results")
        long = res.to_long().assign(llm=name)
        long["subgroup"] = res.instances["subgroup"].astype(str).reindex(long["instance_id"]).to_numpy()
        frames.append(long[["llm", "instance_id", "subgroup", "success", "confidence"]])
    table = pd.concat(frames, ignore_index=True)
    return table[table["success"].notna()].reset_index(drop=True)


def data_prompts(res) -> pd.DataFrame:
    """A data set's prompts as an onboarding prompts table (chat prompts split into system and user turns)."""
    res.require_prompts()
    inst = res.instances.reset_index().rename(columns={res.instances.index.name or "index": "instance_id"})
    split = inst["prompt"].astype(str).map(split_chat_prompt)
    inst["system_prompt"] = [s for s, _ in split]
    inst["prompt"] = [u for _, u in split]
    return inst[["instance_id", "prompt", "target", "subgroup", "system_prompt"]]


def write_variants(tables: Sequence[pd.DataFrame], out: str | Path) -> list[str]:
    """Write ``<out>/v<k>.jsonl`` per variant (atomically: a killed run never leaves half a file)."""
    from assessors.io import atomic_write

    written = []
    for v, t in enumerate(tables):
        path = atomic_write(Path(out) / f"v{v}.jsonl",
                            lambda tmp, t=t: t.to_json(tmp, orient="records", lines=True, force_ascii=False))
        written.append(str(path))
        log.info("wrote %s: %d items in %d subgroups", path, len(t), t["subgroup"].nunique())
    return written
