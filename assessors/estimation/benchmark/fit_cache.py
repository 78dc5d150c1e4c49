"""On-disk tier of the per-source-split cache: fits shared by harness jobs, sizes and runs.

The process cache in :mod:`assessors.estimation.benchmark.base` keeps a source split's fits (IRT and
latent item fits, lasso's path, the SVD, the split-level assessor proxy, the anchors of a fixed
``core_seed``) for the trials of one harness job. Every job starts a process with an empty one, so
extrapolation's single split per benchmark was refitted by each of its jobs. Inside
``with disk_cache(folder):`` a missing entry is looked up in ``folder`` before it is computed, and a
computed one is stored there, so the first job pays the fit and the later ones load it.

An entry's file name is a hash of the cache tag, the content hash of the matrix the fit saw (the
source LLMs' answers: estimators never pass a target's) and the fit's parameters. Files are written
atomically under a file lock (:func:`~assessors.selection.cache.memo_file`), so a job killed mid-write
leaves no entry rather than a torn one, and a parallel job waits for the first instead of fitting again.
The key does not cover the code: clear the folder after changing how an estimator fits.
"""
from __future__ import annotations

import hashlib
import logging
import pickle
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from assessors.selection.cache import memo_file

log = logging.getLogger(__name__)

#: The folder of the active ``disk_cache`` block (None: no disk tier, the default).
_FOLDER: list[Path | None] = [None]


@contextmanager
def disk_cache(folder: str | Path | None) -> Iterator[None]:
    """Within the block, :func:`load_or_fit` keeps fits in ``folder`` (None: a no-op block)."""
    previous = _FOLDER[0]
    _FOLDER[0] = None if folder is None else Path(folder)
    try:
        yield
    finally:
        _FOLDER[0] = previous


def entry_path(folder: Path, key: tuple) -> Path:
    """The file of cache ``key`` = (tag, data digest, params) in ``folder``."""
    digest = hashlib.sha256(repr(key).encode()).hexdigest()[:24]
    return folder / f"{key[0]}-{digest}.pkl"


def load_or_fit(key: tuple, fn: Callable[[], object]) -> object:
    """``fn()``, read from the active disk cache when it holds ``key``, else computed and stored there.

    Without an active ``disk_cache`` block this is ``fn()``.
    """
    folder = _FOLDER[0]
    if folder is None:
        return fn()
    # the value travels in a 1-tuple so that a stored None is a hit, not a miss
    return memo_file(entry_path(folder, key), lambda: (fn(),), _load,
                     lambda val, fh: pickle.dump(val[0], fh, protocol=pickle.HIGHEST_PROTOCOL))[0]


def _load(path: Path) -> tuple[object] | None:
    """``(value,)`` stored at ``path``, or None when there is no readable entry."""
    if not path.exists():
        return None
    try:
        with open(path, "rb") as fh:
            return (pickle.load(fh),)
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError) as e:
        log.warning("ignoring unreadable fit cache file %s (%s)", path, e)
        return None
