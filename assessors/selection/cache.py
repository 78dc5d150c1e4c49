"""Disk memo for selection work that many sweep jobs share (IRT fits, FA loadings, reference ids).

A sweep runs the same selector (or the same feature space under different sizes) in many
jobs, often in parallel processes. Results are stored as ``.npz`` files keyed by a hash of
the exact inputs (arrays hashed by content) and the parameters, written atomically
(temporary file, then ``os.replace``) and guarded by a file lock, so a parallel job waits for
the first one instead of redoing the work, and a killed job never leaves a torn file.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import zipfile
from pathlib import Path
from typing import Any, Callable, TypeVar

import numpy as np

from assessors.io import atomic_open

log = logging.getLogger(__name__)

T = TypeVar("T")


def array_digest(*arrays: Any) -> str:
    """Content hash of arrays / strings / lists (NaN-safe: hashes the bytes), 16 hex chars."""
    h = hashlib.sha256()
    for a in arrays:
        if a is None:
            h.update(b"<none>")
        elif isinstance(a, np.ndarray):
            a = np.ascontiguousarray(a)
            h.update(str((a.dtype.str, a.shape)).encode())
            h.update(a.tobytes())
        else:
            h.update(json.dumps(a, sort_keys=True, default=str).encode())
        h.update(b"|")
    return h.hexdigest()[:16]


def memo(cache_dir: str | os.PathLike | None, kind: str, key: str, compute: Callable[[], dict[str, np.ndarray]]
         ) -> dict[str, np.ndarray]:
    """Return ``compute()``'s arrays, loading them from ``cache_dir/kind/key.npz`` when present.

    Parameters
    ----------
    cache_dir : path or None
        None disables caching (always computes).
    kind : str
        Sub-folder (e.g. ``"irt"``, ``"fa_loadings"``, ``"reference_ids"``).
    key : str
        Hash of everything the result depends on.
    compute : callable returning dict of str -> ndarray
    """
    if cache_dir is None:
        return compute()
    return memo_file(Path(cache_dir) / kind / f"{key}.npz", compute, _load, lambda out, fh: np.savez(fh, **out))


def memo_file(path: Path, compute: Callable[[], T], load: Callable[[Path], T | None],
              dump: Callable[[T, Any], None]) -> T:
    """``compute()``, read from ``path`` by ``load`` when it holds an entry, else computed and written there.

    ``load(path)`` returns None when there is no readable entry. The entry is computed under a file lock,
    so parallel jobs wait for the first one instead of duplicating the work, and ``dump(value, fh)``
    writes it atomically (temporary file, then rename), so a killed job never leaves a torn file.
    """
    hit = load(path)
    if hit is not None:
        log.info("cache hit: %s", path)
        return hit
    from filelock import FileLock

    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path) + ".lock", timeout=-1):
        hit = load(path)
        if hit is not None:
            return hit
        out = compute()
        with atomic_open(path) as fh:
            dump(out, fh)
    return out


def _load(path: Path) -> dict[str, np.ndarray] | None:
    if not path.exists():
        return None
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as e:
        log.warning("ignoring unreadable selection cache file %s (%s)", path, e)
        return None
