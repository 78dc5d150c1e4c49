"""Your own evaluation results: a documented long or wide table (CSV or Parquet) plus a prompts table.

Results table, ``format="long"`` (one row per evaluated cell)::

    llm,instance_id,success[,cost][,confidence]
    my-model-7b,q001,1
    my-model-7b,q002,0
    other-llm,q001,1

* ``success``: 0/1 (also ``true``/``false``); anything else is an error naming the row. An empty
  cell is an error too, unless ``missing_values`` declares it (e.g. ``[""]`` or ``["NA"]``).
* ``cost`` (e.g. USD) and ``confidence`` (in [0, 1]) are optional per-cell numbers.
* A missing (llm, instance_id) pair is "not evaluated" (NaN); a duplicated pair is an error.
* An empty ``llm`` name, a line with fewer or more fields than the header (e.g. a file cut off
  mid-line) and a file that is not UTF-8 are errors naming the line.
* Names are text: ``NA`` or ``null`` is an LLM name or id like any other, and a name or id with
  leading or trailing white space is an error naming the line (:mod:`assessors.data.names`).

Results table, ``format="wide"`` (one row per LLM)::

    llm,q001,q002,q003
    my-model-7b,1,0,
    other-llm,1,1,0

The first column (named ``llm``, or the first column whatever its name) holds LLM names; every
other column is an instance id; empty cells are "not evaluated" (NaN; ``missing_values``
defaults to ``[""]`` here, their count is logged).

Prompts table (optional; CSV or Parquet)::

    instance_id,prompt[,subgroup][,target][,any extra column]

Every ``instance_id`` in the results must be in the prompts table; extra columns (e.g. a split
column for ``split=predefined``) are kept as instance columns. It is read by the one prompt-file
reader (:func:`~assessors.data.prompts.read_prompt_file`); a prompt that is only white space is
kept for data validation to flag (``blank_prompt``) and leave out. Without a prompts table, instances
have no text: use ``features=success_pattern``. The same description is in
``datasets/table_format.md``.
"""
from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd

from assessors.data.loaders._common import check_lines, read_csv, read_parquet
from assessors.data.names import check_unique, check_whitespace
from assessors.data.prompts import read_prompt_file
from assessors.data.results import Results
from assessors.errors import ConfigError, DataError

log = logging.getLogger("assessors.data")


def _is_parquet(path: Path) -> bool:
    return path.suffix.lower() in (".parquet", ".pq")


def _read_results(path: Path) -> pd.DataFrame:
    """A results table: every CSV cell as the exact string (empty = "", "NA" is text), Parquet as stored."""
    if not path.exists():
        raise DataError(f"{path}: file not found")
    return read_parquet(path) if _is_parquet(path) else read_csv(path, dtype=str, keep_default_na=False)


def _row_where(lines: list[int] | None):
    """Row position -> "line N" of a CSV (``lines`` from :func:`check_lines`) or "row i" of a Parquet file."""
    return (lambda i: f"line {lines[i]}") if lines is not None else (lambda i: f"row {i}")


def _check_llm_names(names: pd.Series, path: Path, lines: list[int] | None) -> None:
    empty = names.isna().to_numpy() | (names.astype(str).str.strip() == "").to_numpy()
    if empty.any():
        i = int(np.flatnonzero(empty)[0])
        raise DataError(f"{path}: empty LLM name at {_row_where(lines)(i)} ({int(empty.sum())} rows in all)")
    check_whitespace(names, path, "LLM name", _row_where(lines))


def _declared_missing(cells: pd.Series, missing_values, path: Path, where, what: str) -> pd.Series:
    """``cells`` with declared missing tokens as NaN; an undeclared empty cell is an error."""
    tokens = {str(t).strip() for t in (missing_values or [])}
    text = cells.astype(str).str.strip().where(cells.notna(), "")
    declared = text.isin(tokens).to_numpy()
    empty = (text == "").to_numpy() & ~declared
    if empty.any():
        i = int(np.flatnonzero(empty)[0])
        raise DataError(f"{path}: empty {what} at {where(i)} ({int(empty.sum())} in all). A cell that "
                        "was not evaluated is a missing row in the long format; or declare the empty value as "
                        "missing: data.missing_values=['']")
    if declared.any():
        log.warning("%s: %d %s(s) declared missing (%s) loaded as not evaluated", path, int(declared.sum()), what,
                    sorted(tokens))
    return cells.where(~declared, np.nan)


def read_prompts(path: str | Path) -> pd.DataFrame:
    """Read a prompts table (:func:`~assessors.data.prompts.read_prompt_file`: ids as text, checked)
    into an instances frame indexed by ``instance_id``; empty cells are missing (NaN), and prompts that
    are only white space are kept for data validation to flag by id."""
    table = read_prompt_file(path, required=("instance_id", "prompt"), blank_prompts=True)
    rest = table.columns.drop("instance_id")
    table[rest] = table[rest].mask(table[rest] == "")
    return table.set_index("instance_id")


def load_table(results_path: str | Path, prompts_path: str | Path | None = None, format: str = "long",
               name: str | None = None, missing_values: list[str] | None = None) -> Results:
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
    missing_values : list of str, optional
        Success cells that mean "not evaluated" (e.g. ``[""]``, ``["NA"]``). Default: none in the
        long format (an empty cell is an error naming its line), ``[""]`` in the wide format.

    Returns
    -------
    Results
        ``success`` of shape (n_llms, n_instances); instances in prompts-table order when given,
        else in order of first appearance.
    """
    results_path = Path(results_path)
    name = name or results_path.stem
    if format not in ("long", "wide"):
        raise ConfigError(f"load_table: format must be 'long' or 'wide', got {format!r}")
    lines = None if _is_parquet(results_path) else check_lines(results_path)
    table = _read_results(results_path)
    if format == "wide":
        table = _wide_to_long(table, results_path, [""] if missing_values is None else missing_values, lines)
    else:
        table = _check_long(table, results_path, missing_values, lines)
    if "success" in table.columns and not pd.api.types.is_numeric_dtype(table["success"]):
        table = _true_false(table)
    instances = read_prompts(prompts_path) if prompts_path is not None else None
    res = Results.from_long(table, instances=instances, name=name, source=str(results_path))
    if instances is not None:
        no_results = int(np.isnan(res.success).all(axis=0).sum())
        if no_results:
            log.warning("%s: %d prompts have no result for any LLM (kept, all NaN)", prompts_path, no_results)
    res.meta = {"results_path": str(results_path), "prompts_path": None if prompts_path is None else str(prompts_path)}
    log.info("table %s: loaded %d LLMs x %d instances", name, *res.shape)
    return res


def _check_long(table: pd.DataFrame, path: Path, missing_values, lines) -> pd.DataFrame:
    """A long table's columns checked, declared-missing success cells NaN, empty optional numbers NaN."""
    for col in ("llm", "success"):
        if col not in table.columns:
            raise DataError(f"{path}: missing column {col!r} (have {list(table.columns)})")
    _check_llm_names(table["llm"], path, lines)
    for col, what in (("instance_id", "instance id"), ("subgroup", "subgroup")):
        if col in table.columns:
            check_whitespace(table[col], path, what, _row_where(lines))
    table["success"] = _declared_missing(table["success"], missing_values, path, _row_where(lines), "success cell")
    for col in ("cost", "confidence"):  # optional numbers: an empty cell is unknown
        if col in table.columns and table[col].dtype == object:
            table[col] = table[col].replace("", np.nan)
    return table


def _true_false(table: pd.DataFrame) -> pd.DataFrame:
    """Success cells ``true``/``false`` (any case) as 1.0/0.0; anything else is left for
    ``Results.from_long`` to report."""
    low = table["success"].astype(str).str.strip().str.lower()
    table = table.assign(success=table["success"].where(~low.isin(["true", "false"]), (low == "true").astype(float)))
    table["success"] = table["success"].map(lambda v: float(v) if isinstance(v, (bool, np.bool_)) else v)
    return table


def _wide_to_long(table: pd.DataFrame, path: Path, missing_values, lines) -> pd.DataFrame:
    llm_col = "llm" if "llm" in table.columns else table.columns[0]
    if table.shape[1] < 2:
        raise DataError(f"{path}: a wide table needs an LLM column and at least one instance column")
    _check_llm_names(table[llm_col], path, lines)
    llms = table[llm_col].astype(str)
    check_unique(llms, path, "LLM", _row_where(lines))
    wide = table.drop(columns=llm_col)
    wide.columns = wide.columns.astype(str)
    check_whitespace(wide.columns, path, "instance column")
    check_unique(wide.columns, path, "instance column", lambda j: f"column {j + 2}")
    long = wide.set_axis(llms.to_numpy(), axis=0).stack(future_stack=True).reset_index()
    long.columns = ["llm", "instance_id", "success"]
    n_cols, row_where = wide.shape[1], _row_where(lines)

    def where(i: int) -> str:  # cell i of the stacked table: row i // n_cols, column i % n_cols
        return f"{row_where(i // n_cols)}, column {wide.columns[i % n_cols]!r}"

    long["success"] = _declared_missing(long["success"], missing_values, path, where, "success cell")
    return long[long["success"].notna()]
