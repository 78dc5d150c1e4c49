"""Files users hand to ``predict.py``: prompts (CSV/JSONL), an LLM's reference results, output tables."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd

from assessors.data.loaders._common import read_csv
from assessors.data.names import check_whitespace
from assessors.data.prompts import ID_COLUMNS, check_ids, read_prompt_file
from assessors.errors import DataError


def read_prompts(path: str | os.PathLike) -> pd.DataFrame:
    """Prompts from CSV, JSONL or Parquet (:func:`assessors.data.prompts.read_prompt_file`) -> ``id, prompt``.

    Without an id column, ids are the row numbers ``"0"``, ``"1"``, ...
    """
    df = read_prompt_file(path, row_ids=True)
    return pd.DataFrame({"id": df["instance_id"].to_numpy(), "prompt": df["prompt"].astype(str).to_numpy()})


def read_reference(path: str | os.PathLike, llm: str | None = None) -> dict[str, float]:
    """Reference results of one LLM as ``{reference id: success}``.

    Accepts an onboarding output directory (``<dir>/results`` or a ``Results`` parquet
    directory), a CSV with an id column (``instance_id``/``reference_id``/``id``) and
    ``success`` (plus ``llm`` to pick one of several LLMs), or JSON ``{id: success}``.
    """
    p = Path(path)
    if not p.exists():
        raise DataError(f"{p}: reference results not found")
    if p.is_dir():
        return _reference_from_results(p, llm)
    if p.suffix == ".json":
        return _reference_from_json(p)
    return _reference_from_csv(p, llm)


def _reference_from_results(p: Path, llm: str | None) -> dict[str, float]:
    from assessors.data.results import Results

    res = Results.from_parquet(p / "results" if (p / "results").exists() else p)
    name = llm if llm in res.llms else (res.llms[0] if len(res.llms) == 1 else None)
    if name is None:
        raise DataError(f"{p}: holds LLMs {res.llms}; set the LLM name to pick one")
    row = res.success[res.llms.index(name)]
    return {i: float(v) for i, v in zip(res.instance_ids, row) if np.isfinite(v)}


def _reference_from_json(p: Path) -> dict[str, float]:
    data = json.loads(p.read_text())
    if not isinstance(data, dict):
        raise DataError(f"{p}: expected a JSON object {{reference id: success}}")
    return {str(k): (None if v is None else float(v)) for k, v in data.items()}


def _reference_from_csv(p: Path, llm: str | None) -> dict[str, float]:
    # ids and names are text ("NA" is an id); only an empty success cell is missing
    df = read_csv(p, dtype={c: str for c in ID_COLUMNS + ("llm",)})
    idc = next((c for c in ID_COLUMNS if c in df.columns), None)
    if idc is None or "success" not in df.columns:
        raise DataError(f"{p}: need an id column ({'/'.join(ID_COLUMNS)}) and 'success' (have {list(df.columns)})")
    line = lambda i: f"line {int(df.index[i]) + 2}"  # noqa: E731 -- index: the file's data rows
    if "llm" in df.columns:
        check_whitespace(df["llm"], p, "LLM name", line)
        if llm is None and df["llm"].nunique() > 1:
            raise DataError(f"{p}: holds several LLMs ({sorted(df['llm'].unique())[:5]}); set the LLM name")
        df = df[df["llm"] == llm] if llm is not None else df
    ids = check_ids(df[idc], p, line, "reference id")
    return {i: (None if pd.isna(v) else float(v)) for i, v in zip(ids, df["success"])}


def write_table(df: pd.DataFrame, path: str | os.PathLike) -> Path:
    """CSV or JSONL (by suffix), written atomically."""
    from assessors.io import atomic_write

    if Path(path).suffix in (".jsonl", ".json"):
        return atomic_write(path, lambda tmp: df.to_json(tmp, orient="records", lines=True))
    return atomic_write(path, lambda tmp: df.to_csv(tmp, index=False))
