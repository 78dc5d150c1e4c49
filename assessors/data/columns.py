"""The one check that a table has the columns a reader needs, with an error naming the file."""
from __future__ import annotations

from typing import Iterable

import pandas as pd

from assessors.errors import DataError

#: How many present columns an error lists (wide result tables have thousands).
_SHOWN = 20


def require_columns(table: pd.DataFrame, columns: Iterable[str], source: object) -> None:
    """Raise :class:`DataError` naming ``source`` and the first of ``columns`` missing from ``table``."""
    for col in columns:
        if col not in table.columns:
            have = list(table.columns)
            more = f" and {len(have) - _SHOWN} more" if len(have) > _SHOWN else ""
            raise DataError(f"{source}: missing column {col!r} (have {have[:_SHOWN]}{more})")
