"""Your own evaluation results: a documented long or wide table (CSV or Parquet) plus a prompts table.

Results table, ``format="long"`` (one row per evaluated cell)::

    llm,instance_id,success[,cost][,confidence]
    my-model-7b,q001,1
    my-model-7b,q002,0
    other-llm,q001,1

* ``success``: 0/1 (also ``true``/``false``); anything else is an error naming the row.
* ``cost`` (e.g. USD) and ``confidence`` (in [0, 1]) are optional per-cell numbers.
* A missing (llm, instance_id) pair is "not evaluated" (NaN); a duplicated pair is an error.

Results table, ``format="wide"`` (one row per LLM)::

    llm,q001,q002,q003
    my-model-7b,1,0,
    other-llm,1,1,0

The first column (named ``llm``, or the first column whatever its name) holds LLM names; every
other column is an instance id; empty cells are NaN.

Prompts table (optional; CSV or Parquet)::

    instance_id,prompt[,subgroup][,target][,any extra column]

Every ``instance_id`` in the results must be in the prompts table; extra columns (e.g. a split
column for ``split=predefined``) are kept as instance columns. Without a prompts table, instances
have no text: use ``features=success_pattern``. The same description is in
``datasets/table_format.md``.
"""
from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd

from assessors.data.loaders._common import read_csv
from assessors.data.results import Results
from assessors.errors import ConfigError, DataError

log = logging.getLogger("assessors.data")


def _read_any(path: Path) -> pd.DataFrame:
    if not path.exists():
        raise DataError(f"{path}: file not found")
    if path.suffix.lower() in (".parquet", ".pq"):
        try:
            return pd.read_parquet(path)
        except Exception as e:  # pyarrow raises ArrowInvalid / OSError on truncated files
            raise DataError(f"{path}: truncated or corrupt Parquet file ({type(e).__name__}: {e})") from e
    return read_csv(path, dtype={"instance_id": str, "llm": str})


def read_prompts(path: str | Path) -> pd.DataFrame:
    """Read a prompts table into an instances frame indexed by ``instance_id``."""
    path = Path(path)
    table = _read_any(path)
    for col in ("instance_id", "prompt"):
        if col not in table.columns:
            raise DataError(f"{path}: missing column {col!r} (have {list(table.columns)})")
    table["instance_id"] = table["instance_id"].astype(str)
    dup = table["instance_id"].duplicated()
    if dup.any():
        i = int(np.flatnonzero(dup.to_numpy())[0])
        raise DataError(f"{path}: duplicated instance_id {table['instance_id'].iloc[i]!r} at row {i} "
                        f"(line {i + 2} of a CSV)")
    return table.set_index("instance_id")


def load_table(results_path: str | Path, prompts_path: str | Path | None = None, format: str = "long",
               name: str | None = None) -> Results:
    """Load user results in the documented long or wide format (see the module docstring).

    Parameters
    ----------
    results_path : path
        CSV or Parquet results table.
    prompts_path : path, optional
        CSV or Parquet prompts table with ``instance_id, prompt[, subgroup, target, ...]``.
    format : {"long", "wide"}
    name : str, optional
        Name of the Results (default: the results file stem).

    Returns
    -------
    Results
        ``success`` of shape (n_llms, n_instances); instances in prompts-table order when given,
        else in order of first appearance.
    """
    results_path = Path(results_path)
    name = name or results_path.stem
    table = _read_any(results_path)
    if format == "wide":
        table = _wide_to_long(table, results_path)
    elif format != "long":
        raise ConfigError(f"load_table: format must be 'long' or 'wide', got {format!r}")
    if "success" in table.columns and not pd.api.types.is_numeric_dtype(table["success"]):
        # accept true/false (any case) as well as 0/1; anything else is reported by Results.from_long
        low = table["success"].astype(str).str.strip().str.lower()
        table = table.assign(success=table["success"].where(~low.isin(["true", "false"]), (low == "true").astype(float)))
        table["success"] = table["success"].map(lambda v: float(v) if isinstance(v, (bool, np.bool_)) else v)
    instances = read_prompts(prompts_path) if prompts_path is not None else None
    res = Results.from_long(table, instances=instances, name=name, source=str(results_path))
    if instances is not None:
        no_results = int(np.isnan(res.success).all(axis=0).sum())
        if no_results:
            log.warning("%s: %d prompts have no result for any LLM (kept, all NaN)", prompts_path, no_results)
    res.meta = {"results_path": str(results_path), "prompts_path": None if prompts_path is None else str(prompts_path)}
    log.info("table %s: loaded %d LLMs x %d instances", name, *res.shape)
    return res


def _wide_to_long(table: pd.DataFrame, path: Path) -> pd.DataFrame:
    llm_col = "llm" if "llm" in table.columns else table.columns[0]
    if table.shape[1] < 2:
        raise DataError(f"{path}: a wide table needs an LLM column and at least one instance column")
    llms = table[llm_col].astype(str)
    dup = llms.duplicated()
    if dup.any():
        i = int(np.flatnonzero(dup.to_numpy())[0])
        raise DataError(f"{path}: duplicated LLM {llms.iloc[i]!r} at row {i} (line {i + 2} of a CSV)")
    wide = table.drop(columns=llm_col)
    wide.columns = wide.columns.astype(str)
    if wide.columns.duplicated().any():
        raise DataError(f"{path}: duplicated instance column {wide.columns[wide.columns.duplicated()][0]!r}")
    long = wide.set_axis(llms.to_numpy(), axis=0).stack(future_stack=True).reset_index()
    long.columns = ["llm", "instance_id", "success"]
    return long[long["success"].notna()]
