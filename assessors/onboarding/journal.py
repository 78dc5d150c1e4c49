"""Append-only JSONL journal of onboarding answers, durable per item.

Each finished request is one JSON line, flushed and fsync'ed before the next is written,
so a crash loses at most the line being written. On reopen, a torn last line (no final
newline) is cut off. The last record per ``instance_id`` wins.
"""
from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from assessors.errors import DataError

log = logging.getLogger(__name__)


class Journal:
    """JSONL journal at ``path`` (parent directories are created).

    Parameters
    ----------
    path : str or PathLike
        The ``.jsonl`` file.
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self._fh = None

    def _repair(self) -> None:
        """Cut a torn final line left by a crash mid-write."""
        if not self.path.exists() or self.path.stat().st_size == 0:
            return
        with open(self.path, "rb+") as fh:
            data = fh.read()
            if data.endswith(b"\n"):
                return
            keep = data.rfind(b"\n") + 1
            log.warning("%s: dropping a torn last line (%d bytes) from an interrupted run",
                        self.path, len(data) - keep)
            fh.truncate(keep)
            fh.flush()
            os.fsync(fh.fileno())

    def load(self) -> dict[str, dict]:
        """Records by instance id (last one wins); empty if the file does not exist."""
        self._repair()
        out: dict[str, dict] = {}
        if not self.path.exists():
            return out
        with open(self.path, encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                    out[str(rec["instance_id"])] = rec
                except (json.JSONDecodeError, KeyError, TypeError) as e:
                    raise DataError(f"{self.path}:{lineno}: not a journal record ({e})") from e
        return out

    def append(self, record: dict) -> None:
        """Write one record durably (flush + fsync)."""
        if self._fh is None:
            self._repair()
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(self.path, "a", encoding="utf-8")
        self._fh.write(json.dumps(record, ensure_ascii=False, allow_nan=False) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def __enter__(self) -> "Journal":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
