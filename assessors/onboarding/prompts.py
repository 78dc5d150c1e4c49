"""Prompt files for onboarding: ``instance_id, prompt, target, subgroup`` tables (CSV or JSONL).

``python predict.py mode=onboard onboard.prompts=[FILE,...]`` reads them (see :mod:`assessors.tasks.onboard`).
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import pandas as pd

from assessors.errors import DataError


def read_prompts(paths: Sequence[str], limit: int | None = None, ids: set[str] | None = None) -> pd.DataFrame:
    """Read prompt tables (CSV or JSONL) into ``instance_id, prompt, target, subgroup``.

    ``id`` is accepted for ``instance_id``. Without a ``subgroup`` column the file stem
    (minus a ``_prompts`` suffix) is the subgroup and ids become ``<subgroup>/<id>``, as the
    ``open_llm_leaderboard_v2`` loader names them (``prompts/bbh_navigate_prompts.csv`` row
    ``id=3`` -> ``bbh_navigate/3``). ``limit`` keeps the first rows per file; ``ids`` keeps
    only those instance ids.
    """
    frames = []
    for p in map(Path, paths):
        if not p.exists():
            raise DataError(f"{p}: prompts file not found")
        df = pd.read_json(p, lines=True, dtype=False) if p.suffix in (".jsonl", ".json") else pd.read_csv(p, dtype=str, keep_default_na=False)
        if "instance_id" not in df.columns and "id" in df.columns:
            df = df.rename(columns={"id": "instance_id"})
        for col in ("instance_id", "prompt", "target"):
            if col not in df.columns:
                raise DataError(f"{p}: missing column {col!r} (have {list(df.columns)})")
        df["instance_id"] = df["instance_id"].astype(str)
        if "subgroup" not in df.columns:
            df["subgroup"] = p.stem.removesuffix("_prompts")
            df["instance_id"] = df["subgroup"] + "/" + df["instance_id"]
        if ids is not None:
            df = df[df["instance_id"].isin(ids)]
        frames.append(df.head(limit) if limit else df)
    return pd.concat(frames, ignore_index=True)
