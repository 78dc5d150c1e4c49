"""Prompt files a user hands in (CSV or JSONL): the one reader behind scoring, routing and onboarding.

A prompts file has a ``prompt`` column and, usually, an id column (``instance_id``, ``reference_id``
or ``id``; the first present is used and returned as ``instance_id``). Every CSV cell is read as
text (an empty cell stays ``""``), so ids such as ``007`` keep their zeros.

An OpenAI ``evals`` run log (``<dataset>/<model>.jsonl``, recognised by its first record) is read as
the ``openai_evals`` loader reads it (:func:`~assessors.data.loaders.evals_prompts.read_evals_prompts`):
``instance_id, prompt, target, subgroup`` with the loader's ids and rendered prompts.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from assessors.data.columns import require_columns
from assessors.data.loaders._common import read_csv
from assessors.data.loaders.evals_prompts import is_evals_log, read_evals_prompts
from assessors.errors import DataError

#: Column names accepted as the instance id, in order of preference.
ID_COLUMNS = ("instance_id", "reference_id", "id")


def empty_prompts(prompts: pd.Series) -> np.ndarray:
    """Boolean mask of shape (n,): prompts that are missing or only white space."""
    return (prompts.isna() | (prompts.astype(str).str.strip() == "")).to_numpy()


def read_prompt_file(path: str | os.PathLike, required: Sequence[str] = ("prompt",)) -> pd.DataFrame:
    """Read one CSV or JSONL (``.jsonl``/``.json``, by suffix) prompts file, or an OpenAI evals log.

    Parameters
    ----------
    path : path-like
    required : sequence of str
        Columns that must be present (after the id column is renamed to ``instance_id``).

    Returns
    -------
    pandas.DataFrame of shape (n_prompts, n_columns)
        The file's columns, in file order, with the id column (if any) renamed ``instance_id``
        and cast to str.

    Raises
    ------
    DataError
        Naming the file: not found, unreadable, a required column missing, or an empty prompt
        (with its row).
    """
    p = Path(path)
    if not p.exists():
        raise DataError(f"{p}: prompts file not found")
    if p.suffix == ".jsonl" and is_evals_log(p):
        df = read_evals_prompts(p)
    elif p.suffix in (".jsonl", ".json"):
        try:
            df = pd.read_json(p, lines=True, dtype=False)
        except ValueError as e:
            raise DataError(f"{p}: not a JSON-lines file ({e})") from e
    else:
        df = read_csv(p, dtype=str, keep_default_na=False)
    idc = next((c for c in ID_COLUMNS if c in df.columns), None)
    if idc is not None:
        df = df.rename(columns={idc: "instance_id"})
        df["instance_id"] = df["instance_id"].astype(str)
    require_columns(df, required, p)
    if "prompt" in df.columns:
        bad = empty_prompts(df["prompt"])
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise DataError(f"{p}: empty prompt in data row {row + 1} ({int(bad.sum())} in all)")
    return df


def read_prompt_files(paths: Sequence[str | os.PathLike], limit: int | None = None,
                      ids: set[str] | None = None, required: Sequence[str] = ("target",)) -> pd.DataFrame:
    """Read prompt tables (CSV or JSONL) into ``instance_id, prompt, target, subgroup``.

    ``id`` or ``reference_id`` is accepted for ``instance_id``. Without a ``subgroup`` column the
    file stem (minus a ``_prompts`` suffix) is the subgroup and ids become ``<subgroup>/<id>``, as
    the ``open_llm_leaderboard_v2`` loader names them (``prompts/bbh_navigate_prompts.csv`` row
    ``id=3`` -> ``bbh_navigate/3``); an evals log brings its own (``causal_judgment.test.57``).
    ``limit`` keeps the first rows per file; ``ids`` keeps only those instance ids.
    """
    frames = []
    for p in map(Path, paths):
        df = read_prompt_file(p, required=("instance_id", "prompt", *required))
        if "subgroup" not in df.columns:
            df["subgroup"] = p.stem.removesuffix("_prompts")
            df["instance_id"] = df["subgroup"] + "/" + df["instance_id"]
        if ids is not None:
            df = df[df["instance_id"].isin(ids)]
        frames.append(df.head(limit) if limit else df)
    return pd.concat(frames, ignore_index=True)
