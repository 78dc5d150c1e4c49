"""Loader for the RouterBench subset shipped by RouterDC (``<root>/routerbench/<dataset>_<split>.csv``).

Columns: an unnamed RouterBench row number, ``sample_id, prompt, eval_name``, one 0/1 score column
per model, ``<model>|model_response``, ``<model>|total_cost`` (USD per item) and
``oracle_model_to_route_to``. Prompts and responses are stored as Python list literals
(``"['text']"``); they are decoded to plain text (list items joined by newlines), falling back to
the raw cell when a cell is not a list literal.

Instance ids are the ``sample_id``. A few ids occur on more than one row upstream (14 in
arc_challenge, with different prompts or results): all rows are kept, and each duplicated id is
suffixed with ``#<RouterBench row number>``; the count is logged. Instance columns:
``subgroup`` (= ``eval_name``), ``routerbench_split`` (train/test), ``oracle_model_to_route_to``.

No training-prompt pool: the files hold each LLM's 0/1 score and answer but no gold answer (``target``
is NaN; mbpp would need its unit tests), so a new LLM's answers to these prompts cannot be graded.
``Results.meta["no_prompt_pool"]`` says so, and onboarding a model trained on this data asks for prompt
files with a target (:mod:`assessors.data.training_prompts`).
"""
from __future__ import annotations

import ast
import logging
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from assessors.data.columns import require_columns
from assessors.data.download import locate
from assessors.data.loaders._common import check_binary, check_lines, read_csv, select
from assessors.data.names import check_unique
from assessors.data.results import Results
from assessors.errors import DataError

log = logging.getLogger("assessors.data")

NAME = "routerbench"
#: Why a model trained on this data has no default onboarding pool (``meta["no_prompt_pool"]``).
NO_POOL = ("its files hold the prompts and each LLM's 0/1 score and answer but no gold answer to grade a new "
           "LLM's answers by: arc_challenge and winograde have no answer key, mbpp no unit tests")
_META = {"sample_id", "prompt", "eval_name", "oracle_model_to_route_to"}


def decode_list_literal(cell) -> str | float:
    """``"['a', 'b']"`` -> ``"a\\nb"``; other strings unchanged; NaN stays NaN."""
    if not isinstance(cell, str):
        return np.nan if cell is None or (isinstance(cell, float) and np.isnan(cell)) else str(cell)
    s = cell.strip()
    if s.startswith("[") and s.endswith("]"):
        try:
            val = ast.literal_eval(s)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return cell
        if isinstance(val, list) and all(isinstance(v, str) for v in val):
            return "\n".join(val)
    return cell


def load_routerbench(
    root: str | Path | None = None,
    cache_dir: str | Path | None = None,
    splits: Sequence[str] = ("train", "test"),
    datasets: Sequence[str] = ("arc_challenge", "mbpp", "winograde"),
    responses: bool = True,
    download: bool = True,
) -> Results:
    """Load RouterBench CSVs with per-cell cost and (optionally) model responses.

    Parameters
    ----------
    root, cache_dir, download
        Data location, see :func:`assessors.data.download.locate`.
    splits : sequence of str
        Which RouterDC splits to load (``train``, ``test``).
    datasets : sequence of str
        File prefixes (globs allowed): ``arc_challenge``, ``mbpp``, ``winograde``.
    responses : bool
        Keep ``<model>|model_response`` as ``Results.responses``.

    Returns
    -------
    Results
        ``success`` and ``cost`` of shape (11, n_prompts); NaN where a model has no score.
    """
    base = locate(NAME, root=root, cache_dir=cache_dir, download=download)
    available = sorted(p.stem for p in base.glob("*.csv"))
    ds_avail = sorted({s.rsplit("_", 1)[0] for s in available if "_" in s})
    chosen_ds = select(ds_avail, datasets, "dataset", base)
    frames = [_read_file(base / f"{ds}_{sp}.csv", sp, available) for ds in chosen_ds for sp in splits]
    cols = _common_columns(frames)
    table = pd.concat(frames, ignore_index=True)
    llms = [c for c in cols if "|" not in c and c not in _META | {"row", "routerbench_split", "_file", "_line"}]
    if not llms:
        raise DataError(f"{base}: no model score columns found")
    instances = _instances(table, _instance_ids(table, base))
    success, cost = _scores_and_costs(table, llms, base)
    n_nan = int(np.isnan(success).sum())
    if n_nan:
        log.info("%s: %d cells have no score (NaN)", NAME, n_nan)
    res = Results(instances=instances, llms=llms, success=success, cost=cost, name=NAME,
                  meta={"datasets": chosen_ds, "splits": list(splits), "root": str(base), "no_prompt_pool": NO_POOL})
    if responses:
        res.responses = _responses(table, llms, instances.index)
    log.info("%s: loaded %d LLMs x %d instances", NAME, *res.shape)
    return res


def _read_file(path: Path, split: str, available: list[str]) -> pd.DataFrame:
    """One ``<dataset>_<split>.csv``, checked, with its split, file name and CSV line per row."""
    if not path.exists():
        raise DataError(f"{path}: not found (available: {available})")
    # C engine: prompts and responses hold quoted newlines, quotes and commas. It fills a
    # line cut short with NaN scores ("no score"): check_lines makes that an error first
    check_lines(path)
    frame = read_csv(path, dtype={"sample_id": str, "prompt": str, "eval_name": str})
    missing = _META - set(frame.columns)
    if missing:
        raise DataError(f"{path}: missing column(s) {sorted(missing)}")
    first = frame.columns[0]
    frame = frame.rename(columns={first: "row"}) if first.startswith("Unnamed") or first == "" else frame
    frame["routerbench_split"] = split
    frame["_file"] = path.name
    frame["_line"] = np.arange(len(frame)) + 2
    return frame


def _common_columns(frames: list[pd.DataFrame]) -> pd.Index:
    """The columns every file shares (an error names the first file that differs)."""
    cols = frames[0].columns
    for f in frames[1:]:
        if list(f.columns) != list(cols):
            raise DataError(f"{f['_file'].iloc[0]}: columns differ from {frames[0]['_file'].iloc[0]}")
    return cols


def _instance_ids(table: pd.DataFrame, base: Path) -> pd.Series:
    """``sample_id``, with ``#<RouterBench row>`` appended to the ids several rows share."""
    ids = table["sample_id"].astype(str)
    dup = ids.duplicated(keep=False)
    if dup.any():
        suffix = table["row"].astype(str) if "row" in table.columns else pd.Series(table.index.astype(str))
        ids = ids.where(~dup, ids + "#" + suffix)
        log.warning("%s: %d rows share %d duplicated sample_ids; kept all, ids suffixed with '#<row>'",
                    NAME, int(dup.sum()), table.loc[dup, "sample_id"].nunique())
        check_unique(ids, base, "sample_id (with its row number)")
    return ids


def _instances(table: pd.DataFrame, ids: pd.Series) -> pd.DataFrame:
    """Instance table: decoded prompt, subgroup (``eval_name``), split and oracle model."""
    return pd.DataFrame({
        "prompt": [decode_list_literal(p) for p in table["prompt"]],
        "subgroup": table["eval_name"].to_numpy(dtype=object),
        "target": np.nan,
        "routerbench_split": table["routerbench_split"].to_numpy(dtype=object),
        "oracle_model_to_route_to": table["oracle_model_to_route_to"].to_numpy(dtype=object),
    }, index=pd.Index(ids.tolist(), name="instance_id"))


def _scores_and_costs(table: pd.DataFrame, llms: list[str], base: Path) -> tuple[np.ndarray, np.ndarray]:
    """``success`` and ``cost``, each float32 of shape (n_llms, n_rows); cost NaN where not given."""
    success = np.empty((len(llms), len(table)), dtype=np.float32)
    cost = np.full((len(llms), len(table)), np.nan, dtype=np.float32)
    for f_name, part in table.groupby("_file", sort=False):
        pos = part.index.to_numpy()
        success[:, pos] = _binary_T(part, llms, base / f_name)
        for i, m in enumerate(llms):
            if f"{m}|total_cost" in part.columns:
                cost[i, pos] = pd.to_numeric(part[f"{m}|total_cost"], errors="coerce").to_numpy(dtype=np.float32)
    return success, cost


def _responses(table: pd.DataFrame, llms: list[str], instance_ids: pd.Index) -> pd.DataFrame:
    """Long ``(llm, instance_id, response)`` table of the decoded ``<model>|model_response`` cells."""
    rows = [(m, iid, decode_list_literal(r)) for m in llms if f"{m}|model_response" in table.columns
            for iid, r in zip(instance_ids, table[f"{m}|model_response"])]
    return pd.DataFrame(rows, columns=["llm", "instance_id", "response"])


def _binary_T(part: pd.DataFrame, llms: list[str], path: Path) -> np.ndarray:
    """(n_rows, n_llms) score block -> checked float32 (n_llms, n_rows); errors name the CSV line."""
    block = part[llms].to_numpy()
    return check_binary(block, path, part["sample_id"].tolist(), llms, row_offset=2).T
