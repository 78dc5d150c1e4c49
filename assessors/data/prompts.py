"""Prompt files (CSV, JSONL or Parquet): the one reader behind scoring, routing, onboarding, the
``table`` loader and the ``open_llm_leaderboard_v2`` prompt files, with one id rule (:func:`check_ids`,
which reference results files use too).

A prompts file has a ``prompt`` column and, usually, an id column: the first present of
``instance_id``, ``reference_id`` and ``id``, returned as ``instance_id``; without one, callers that
accept it (``row_ids=True``: prompts to score) get the data-row numbers ``"0"``, ``"1"``, ... Ids are
text: every CSV cell is read as text (an empty cell stays ``""``; ``NA`` or ``null`` is a name), so
ids such as ``007`` keep their zeros. An empty id, an id or subgroup with leading or trailing white
space, and an id that occurs twice are errors naming the row (:mod:`assessors.data.names`). A CSV
row with fewer fields than the header (a file cut off inside or after a quoted prompt) is an error
naming its line, not a row with missing cells.

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
from assessors.data.loaders._common import check_lines, read_csv, read_parquet
from assessors.data.loaders.evals_prompts import is_evals_log, read_evals_prompts
from assessors.data.names import check_unique, check_whitespace
from assessors.errors import DataError

#: Column names accepted as the instance id, in order of preference.
ID_COLUMNS = ("instance_id", "reference_id", "id")


def empty_prompts(prompts: pd.Series) -> np.ndarray:
    """Boolean mask of shape (n,): prompts that are missing or only white space."""
    return (prompts.isna() | (prompts.astype(str).str.strip() == "")).to_numpy()


def read_prompt_file(path: str | os.PathLike, required: Sequence[str] = ("prompt",), row_ids: bool = False,
                     blank_prompts: bool = False) -> pd.DataFrame:
    """Read one CSV, JSONL (``.jsonl``/``.json``) or Parquet (``.parquet``/``.pq``) prompts file, or an
    OpenAI evals log.

    Parameters
    ----------
    path : path-like
    required : sequence of str
        Columns that must be present (after the id column is renamed to ``instance_id``).
    row_ids : bool
        Without an id column, number the rows ``"0"``, ``"1"``, ... (else there is no ``instance_id``).
    blank_prompts : bool
        Keep prompts that are missing, empty or only white space (for data validation to flag by id)
        instead of raising.

    Returns
    -------
    pandas.DataFrame of shape (n_prompts, n_columns)
        The file's columns, in file order, with the id column renamed ``instance_id`` (str).

    Raises
    ------
    DataError
        Naming the file: not found, unreadable, a required column missing, an empty, padded or
        repeated id, a padded subgroup, or an empty prompt (each with its row).
    """
    p = Path(path)
    if not p.exists():
        raise DataError(f"{p}: prompts file not found")
    df = _read_frame(p)
    idc = next((c for c in ID_COLUMNS if c in df.columns), None)
    if idc is not None:
        df = df.rename(columns={idc: "instance_id"})
    elif row_ids:
        df.insert(0, "instance_id", np.arange(len(df)).astype(str))
    require_columns(df, required, p)
    row = lambda i: f"data row {i + 1}"  # noqa: E731 -- rows, not lines: prompts may span several lines
    if "instance_id" in df.columns:
        df["instance_id"] = check_ids(df["instance_id"], p, row, idc or "id")
    if "subgroup" in df.columns:
        check_whitespace(df["subgroup"], p, "subgroup", row)
    if "prompt" in df.columns and not blank_prompts:
        bad = empty_prompts(df["prompt"])
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise DataError(f"{p}: empty prompt in {row(i)} ({int(bad.sum())} in all)")
    return df


def _read_frame(p: Path) -> pd.DataFrame:
    """The file as a frame: CSV cells as text, JSON values as JSON typed them, Parquet as stored."""
    suffix = p.suffix.lower()
    if suffix == ".jsonl" and is_evals_log(p):
        return read_evals_prompts(p)
    if suffix in (".jsonl", ".json"):
        try:
            return pd.read_json(p, lines=True, dtype=False)
        except ValueError as e:
            raise DataError(f"{p}: not a JSON-lines file ({e})") from e
    if suffix in (".parquet", ".pq"):
        return read_parquet(p)
    # prompts hold quoted newlines: a row cut short (a truncated file) is an error, not a shorter prompt
    check_lines(p)
    return read_csv(p, dtype=str, keep_default_na=False)


def check_ids(ids: pd.Series, source: object, where, what: str = "id") -> pd.Series:
    """The one id rule of every file that names prompts: ``ids`` as text, checked.

    Parameters
    ----------
    ids : pandas.Series of shape (n,)
        The file's id column, in row order (text, or JSON numbers).
    source : object
        The file, named in messages.
    where : callable
        Row position -> place in the file (``"data row 3"``, ``"line 4"``).
    what : str
        The column's name in messages.

    Returns
    -------
    pandas.Series of shape (n,)
        The ids as text (``7`` for a JSON number 7 or 7.0).

    Raises
    ------
    DataError
        An empty id, an id padded with white space, or an id that occurs twice, naming its row.
    """
    empty = (ids.isna() | (ids.astype(str).str.strip() == "")).to_numpy()
    if empty.any():
        i = int(np.flatnonzero(empty)[0])
        raise DataError(f"{source}: empty {what} in {where(i)} ({int(empty.sum())} in all)")
    ids = ids.map(_id_text)
    check_whitespace(ids, source, what, where)
    check_unique(ids, source, what, where)
    return ids


def _id_text(v) -> str:
    """An id as text: as written for text, ``7`` for a JSON number 7 or 7.0."""
    if isinstance(v, str):
        return v
    if isinstance(v, (int, np.integer)) or isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def read_prompt_files(paths: Sequence[str | os.PathLike], limit: int | None = None,
                      ids: set[str] | None = None, required: Sequence[str] = ("target",)) -> pd.DataFrame:
    """Read prompt tables (CSV or JSONL) into ``instance_id, prompt, target, subgroup``.

    ``id`` or ``reference_id`` is accepted for ``instance_id``. Without a ``subgroup`` column the
    file stem (minus a ``_prompts`` suffix) is the subgroup and ids become ``<subgroup>/<id>``, as
    the ``open_llm_leaderboard_v2`` loader names them (``prompts/bbh_navigate_prompts.csv`` row
    ``id=3`` -> ``bbh_navigate/3``); an evals log brings its own (``causal_judgment.test.57``).
    ``limit`` keeps the first rows per file; ``ids`` keeps only those instance ids. An id in
    several files is an error.
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
    out = pd.concat(frames, ignore_index=True)
    check_unique(out["instance_id"], [str(p) for p in paths], "instance id", fix="Pass each file once")
    return out
