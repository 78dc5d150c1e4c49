"""Shared parsing helpers for the loaders: every read error becomes a :class:`DataError` naming the file.

Loaders call these instead of ``pandas.read_csv`` directly so that truncated or corrupt files,
non-binary success values and empty selections all produce the same kind of message.
"""
from __future__ import annotations

import fnmatch
import logging
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from assessors.data.columns import require_columns
from assessors.errors import DataError

log = logging.getLogger("assessors.data")


def read_csv(path: Path, *, fast: bool = False, **kwargs) -> pd.DataFrame:
    """Read a CSV, turning any parser error into a DataError that names ``path``.

    ``fast=True`` uses the pyarrow engine: several times faster on the wide 0/1 result files, and
    strict about rows with too few fields (a truncated last line is an error, not silent NaNs).
    Text files with quoted newlines use the C engine, which handles them robustly.

    Only an empty cell is missing: ``NA``, ``nan``, ``null`` and pandas' other NA strings stay text,
    so an id, LLM name or subgroup spelled that way is a name (and a success cell spelled that way
    is an error naming it, not a silent NaN). Pass ``keep_default_na`` to choose otherwise.
    """
    if "keep_default_na" not in kwargs:
        kwargs.update(keep_default_na=False, na_values=[""])
    try:
        if fast:
            return pd.read_csv(path, engine="pyarrow", **kwargs)
        return pd.read_csv(path, **kwargs)
    except FileNotFoundError:
        raise DataError(f"{path}: file not found") from None
    except Exception as e:  # pandas ParserError, pyarrow ArrowInvalid, UnicodeDecodeError, ...
        check_utf8(path)  # a wrong encoding is named as such, not as a truncated file
        raise DataError(f"{path}: truncated or corrupt CSV ({type(e).__name__}: {str(e).strip()[:300]})") from e


def read_parquet(path: Path) -> pd.DataFrame:
    """Read a Parquet file, turning a missing, truncated or corrupt file into a DataError naming ``path``."""
    if not Path(path).exists():
        raise DataError(f"{path}: file not found")
    try:
        return pd.read_parquet(path)
    except Exception as e:  # pyarrow raises ArrowInvalid / OSError on truncated files
        raise DataError(f"{path}: truncated or corrupt Parquet file ({type(e).__name__}: {e})") from e


def check_lines(path: Path) -> list[int]:
    """Check a CSV's encoding and field counts; returns the first line number of each data row.

    Raises a DataError naming the line of a non-UTF-8 byte, or of a row with fewer fields than
    the header (a file cut off mid-line) or more.
    """
    import csv

    check_utf8(path)
    csv.field_size_limit(2**31 - 1)
    with open(path, newline="", encoding="utf-8-sig") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if header is None:
            raise DataError(f"{path}: empty file (no header line)")
        starts, prev = [], reader.line_num
        for row in reader:
            start, prev = prev + 1, reader.line_num
            if not row:  # blank line: pandas skips it too
                continue
            if len(row) != len(header):
                kind = "fewer" if len(row) < len(header) else "more"
                raise DataError(f"{path}: line {start} has {len(row)} fields, {kind} than the {len(header)} of the "
                                f"header{' (a line cut off?)' if kind == 'fewer' else ''}: {','.join(row)[:120]!r}")
            starts.append(start)
    return starts


def check_utf8(path: Path) -> None:
    """Raise a DataError naming the line and byte if ``path`` is not UTF-8 text (a BOM is fine)."""
    data = Path(path).read_bytes()
    try:
        data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise DataError(f"{path}: not UTF-8 text: byte 0x{data[e.start]:02x} at line {line}, column {col}; "
                        "re-save the file as UTF-8 (e.g. iconv -f latin1 -t utf-8 in.csv > out.csv)") from None


def check_binary(values: np.ndarray, path: Path, row_labels: Sequence, col_labels: Sequence,
                 row_offset: int | None = 2) -> np.ndarray:
    """Return ``values`` as float32, raising if any non-NaN value is not 0 or 1.

    ``row_offset`` converts a 0-based data row into the 1-based line number of a CSV with a header;
    None for non-text files (the message then names the row label only).
    """
    arr = np.asarray(values, dtype=np.float32) if values.dtype != object else _coerce(values, path, col_labels)
    bad = ~np.isnan(arr) & (arr != 0) & (arr != 1)
    if bad.any():
        r, c = np.argwhere(bad)[0]
        where = f"row {row_labels[r]!r}" if row_offset is None else f"line {r + row_offset} (row {row_labels[r]!r})"
        raise DataError(
            f"{path}: non-binary success value {float(arr[r, c])!r} at {where}, column {col_labels[c]!r}; "
            f"expected 0/1 ({int(bad.sum())} bad cells)"
        )
    return arr


def _coerce(values: np.ndarray, path: Path, col_labels: Sequence) -> np.ndarray:
    frame = pd.DataFrame(values)
    num = frame.apply(pd.to_numeric, errors="coerce")
    bad = num.isna() & frame.notna()
    if bad.to_numpy().any():
        r, c = np.argwhere(bad.to_numpy())[0]
        raise DataError(f"{path}: non-numeric success value {values[r, c]!r} at line {r + 2}, "
                        f"column {col_labels[c]!r}")
    return num.to_numpy(dtype=np.float32)


def bool_success(value, where: str) -> float:
    """Map a bool / 0 / 1 / 'true' / 'false' cell to 1.0 or 0.0 (NaN for None)."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return np.nan
    if isinstance(value, (bool, np.bool_)):
        return float(value)
    if isinstance(value, (int, float, np.integer, np.floating)) and value in (0, 1):
        return float(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "0", "1", "0.0", "1.0"):
        return 1.0 if value.strip().lower() in ("true", "1", "1.0") else 0.0
    raise DataError(f"{where}: non-binary success value {value!r}")


def select(names: Iterable[str], patterns: Sequence[str] | str | None, what: str, source: object) -> list[str]:
    """Names matching any glob in ``patterns`` (all names if None), in the order of ``names``.

    Raises DataError when the selection is empty or a pattern matches nothing, listing what exists.
    """
    names = list(names)
    if patterns is None:
        chosen = names
    else:
        patterns = [patterns] if isinstance(patterns, str) else list(patterns)
        unmatched = [p for p in patterns if not any(fnmatch.fnmatchcase(n, p) for n in names)]
        if unmatched:
            raise DataError(f"{source}: {what} pattern(s) {unmatched} match nothing; available: {sorted(names)}")
        chosen = [n for n in names if any(fnmatch.fnmatchcase(n, p) for p in patterns)]
    if not chosen:
        raise DataError(f"{source}: empty selection of {what} (available: {sorted(names)})")
    return chosen


def latest_per_model(frame: pd.DataFrame, path: Path, model_col: str = "model",
                     time_col: str = "timestamp", log_each: bool = True) -> pd.DataFrame:
    """Keep the latest row per model by ``time_col``; the count of older rows dropped is logged
    (``log_each``) and stored in ``frame.attrs["n_dropped"]`` so callers can log one total."""
    require_columns(frame, (model_col, time_col), path)
    frame = frame.sort_values([model_col, time_col], kind="stable")
    keep = ~frame.duplicated(model_col, keep="last")
    dropped = int((~keep).sum())
    if dropped and log_each:
        log.info("%s: kept the latest of %d rows for %d models (dropped %d older rows)",
                 path.name, len(frame), int(keep.sum()), dropped)
    frame = frame[keep]
    frame.attrs["n_dropped"] = dropped
    return frame
