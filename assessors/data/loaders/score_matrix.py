"""Loader for pickle-free 0/1 score matrices: ``<root>/score_matrices/<name>.npz``.

Each file holds ``scores`` (uint8, models x items) and optionally ``models`` (names). Files are read
with ``np.load(..., allow_pickle=False)``, so a crafted file cannot execute code. There is no prompt
text: use ``features=success_pattern``. Instance ids are ``"<name>/<column>"``; anonymous models
are named ``model_000``, ``model_001``, ...

Some upstream files list a model twice (e.g. 19 names in ``musr.npz``), always with identical
rows: such exact duplicates are dropped, with a warning giving the count, because the same model in
both the training and the test LLMs would leak. Same-name rows that differ are kept as ``name#2``.
"""
from __future__ import annotations

import logging
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd

from assessors.data.download import locate
from assessors.data.loaders._common import check_binary
from assessors.data.results import Results
from assessors.errors import DataError

log = logging.getLogger("assessors.data")

NAME = "score_matrices"


def load_score_matrix(name: str, root: str | Path | None = None, cache_dir: str | Path | None = None,
                      download: bool = True) -> Results:
    """Load ``score_matrices/<name>.npz``.

    Parameters
    ----------
    name : str
        Benchmark name (file stem), e.g. ``musr`` or ``legalbench``; or a path to an ``.npz`` file.
    root, cache_dir, download
        Data location, see :func:`assessors.data.download.locate`.

    Returns
    -------
    Results
        ``success`` of shape (n_models, n_items); ``prompt`` is NaN, ``subgroup`` = ``name``.
    """
    if str(name).endswith(".npz") and Path(name).exists():
        path = Path(name)
        name = path.stem
    else:
        base = locate(NAME, root=root, cache_dir=cache_dir, download=download)
        path = base / f"{name}.npz"
        if not path.exists():
            raise DataError(f"{path}: not found; available: {sorted(p.stem for p in base.glob('*.npz'))}")
    try:
        with np.load(path, allow_pickle=False) as z:
            if "scores" not in z.files:
                raise DataError(f"{path}: no 'scores' array (has {z.files})")
            scores = z["scores"]
            models = z["models"] if "models" in z.files else None
    except DataError:
        raise
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as e:
        raise DataError(f"{path}: truncated or corrupt npz file ({type(e).__name__}: {e})") from e
    if scores.ndim != 2:
        raise DataError(f"{path}: 'scores' must be 2-D (models x items), got shape {scores.shape}")
    n_models, n_items = scores.shape
    if models is None:
        llms = [f"model_{i:03d}" for i in range(n_models)]
    else:
        llms = [str(m) for m in models]
        empty = [i for i, m in enumerate(llms) if not m.strip()]
        if empty:
            raise DataError(f"{path}: empty model name at row {empty[0]} of 'models' ({len(empty)} in all)")
        if len(llms) != n_models:
            raise DataError(f"{path}: 'models' has {len(llms)} names for {n_models} score rows")
        scores, llms = _dedupe(scores, llms, path)
        n_models = len(llms)
    success = check_binary(scores, path, llms, list(range(n_items)), row_offset=None)
    instances = pd.DataFrame({"prompt": np.nan, "subgroup": name, "target": np.nan},
                             index=pd.Index([f"{name}/{j}" for j in range(n_items)], name="instance_id"))
    log.info("score_matrix %s: %d models x %d items%s", name, n_models, n_items,
             "" if models is not None else " (anonymous models)")
    return Results(instances=instances, llms=llms, success=success, name=f"score_matrix:{name}",
                   meta={"path": str(path)})


def _dedupe(scores: np.ndarray, llms: list[str], path: Path) -> tuple[np.ndarray, list[str]]:
    """Drop rows that repeat an earlier row of the same model; rename differing same-name rows."""
    keep, names, seen = [], [], {}
    n_dropped = n_renamed = 0
    for i, m in enumerate(llms):
        rows = seen.setdefault(m, [])
        if any(np.array_equal(scores[i], scores[j]) for j in rows):
            n_dropped += 1
            continue
        names.append(m if not rows else f"{m}#{len(rows) + 1}")
        n_renamed += bool(rows)
        rows.append(i)
        keep.append(i)
    if n_dropped:
        log.warning("%s: dropped %d rows that exactly repeat an earlier row of the same model name", path, n_dropped)
    if n_renamed:
        log.warning("%s: %d rows share a model name with different scores; renamed to '<name>#k'", path, n_renamed)
    return scores[keep], names
