"""Names that identify things in a table: instance ids, LLM names, subgroups.

One rule for each way two names can be confused, used by every reader and by :class:`Results`:

* :func:`check_unique`: the one duplicate check (a repeated id or name is an error naming it and
  its row);
* :func:`check_whitespace`: leading or trailing white space is an error naming the rows, not a
  silent second name (``"gpt-4 "`` on half the rows of ``"gpt-4"`` would be a second LLM);
* :func:`case_variants`: names that differ only by case, for a warning by name (they may be two
  things, e.g. two dataset names, so they are not merged).

Names are text: readers keep ``"NA"``, ``"nan"``, ``"null"`` as names (no NA coercion; only an empty
cell is missing, see :func:`~assessors.data.loaders._common.read_csv`).
"""
from __future__ import annotations

import re
from typing import Callable, Iterable, Sequence

import numpy as np
import pandas as pd

from assessors.errors import DataError

#: How many offending rows an error names.
_SHOWN = 3
_SEP = "\x1f"
#: White space next to a ``_SEP`` of the joined names (starts with the literal: a fast scan).
_EDGE_SPACE = re.compile(r"\x1f(?:(?=\s)|(?<=\s\x1f))")


def _row(i: int) -> str:
    return f"row {i}"


def check_unique(names: Sequence | pd.Index | pd.Series, source: object, what: str = "instance id",
                 where: Callable[[int], str] | None = None, fix: str = "",
                 error: type[Exception] = DataError) -> None:
    """Raise :class:`DataError` if a name occurs twice: the first repeated one, where it repeats, and the count.

    Parameters
    ----------
    names : sequence of shape (n,)
        Ids or names in row order (a :class:`pandas.MultiIndex` checks tuples, e.g. ``(llm, instance_id)``).
    source : object
        What is named in the message (a file, a setting).
    what : str
        What the names are (``"instance id"``, ``"LLM name"``).
    where : callable, optional
        Row position -> place in the source (``"line 7"``); default ``"row i"``.
    fix : str
        A sentence that names the fix, appended to the message.
    error : exception class
        What is raised: :class:`DataError` for data, :class:`~assessors.errors.ConfigError` for names
        the user wrote in a setting.
    """
    values = names if isinstance(names, pd.Index) else pd.Index(list(names), dtype=object)
    dup = values.duplicated()
    if dup.any():
        i = int(np.flatnonzero(dup)[0])
        codes = values.factorize()[0]  # equal names, equal codes (tuples of a MultiIndex too)
        first = int(np.flatnonzero(codes == codes[i])[0])
        n = int(np.unique(codes[dup]).size)
        raise error(f"{source}: duplicated {what} {values[i]!r} at {(where or _row)(i)} (first at "
                    f"{(where or _row)(first)}; {n} {what}(s) repeated in all){'. ' + fix if fix else ''}")


def check_whitespace(names: Iterable, source: object, what: str,
                     where: Callable[[int], str] | None = None) -> None:
    """Raise :class:`DataError` naming the rows whose ``what`` has leading or trailing white space.

    Non-text values (NaN, numbers) are left to the caller's own checks.
    """
    values = names.tolist() if hasattr(names, "tolist") else list(names)
    # one regex over the joined names first: Results runs this on every subset of thousands of ids
    distinct = names.unique().tolist() if isinstance(names, pd.Series) else values
    try:
        joined = _SEP.join(distinct)
    except TypeError:  # NaN or numbers among the names
        joined = _SEP.join(v for v in distinct if isinstance(v, str))
    if not _EDGE_SPACE.search(_SEP + joined + _SEP):
        return
    bad = [(i, v) for i, v in enumerate(values) if isinstance(v, str) and v != v.strip()]
    if bad:
        at = ", ".join(f"{v!r} at {(where or _row)(i)}" for i, v in bad[:_SHOWN])
        raise DataError(f"{source}: {len(bad)} {what}(s) with leading or trailing white space: {at}"
                        f"{' ...' if len(bad) > _SHOWN else ''}; remove it (\"{bad[0][1].strip()}\" and "
                        f"{bad[0][1]!r} would be two different names)")


def case_variants(names: Iterable) -> list[tuple[str, ...]]:
    """Groups of distinct names that differ only by case (each group sorted), in order of first name."""
    groups: dict[str, set] = {}
    for v in names:
        if isinstance(v, str):
            groups.setdefault(v.casefold(), set()).add(v)
    return [tuple(sorted(g)) for g in groups.values() if len(g) > 1]
