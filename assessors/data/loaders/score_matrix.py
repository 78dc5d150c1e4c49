"""Loader for pickle-free 0/1 score matrices: ``<root>/score_matrices/<name>.npz``.

Each file holds ``scores`` (uint8, models x items) and optionally ``models`` (names). Files are read
with ``np.load(..., allow_pickle=False)``, so a crafted file cannot execute code. There is no prompt
text: use ``features=success_pattern``. Instance ids are ``"<name>/<column>"``; anonymous models
are named ``model_000``, ``model_001``, ...

Some upstream files list a model twice (e.g. 19 names in ``musr.npz``), always with identical
rows: such exact duplicates are dropped, with a warning giving the count, because the same model in
both the training and the test LLMs would leak. Same-name rows that differ are kept as ``name#2``.

``items=`` joins the matrix to prompt text when its item order is known: another loader's
:class:`Results` (e.g. the MuSR prompt files of ``open_llm_leaderboard_v2``) names the columns in
order. A width that differs is an error; so is an order that no LLM present in both sources confirms
(see :func:`check_item_order`).
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
from assessors.data.item_order import align_rows
from assessors.errors import ConfigError, DataError

log = logging.getLogger("assessors.data")

NAME = "score_matrices"


def load_score_matrix(name: str, root: str | Path | None = None, cache_dir: str | Path | None = None,
                      download: bool = True, items: Results | None = None, min_agreement: float = 0.99,
                      item_order: str = "detect") -> Results:
    """Load ``score_matrices/<name>.npz``.

    Parameters
    ----------
    name : str
        Benchmark name (file stem), e.g. ``musr`` or ``legalbench``; or a path to an ``.npz`` file.
    root, cache_dir, download
        Data location, see :func:`assessors.data.download.locate`.
    items : Results, optional
        Results whose instances are this matrix's columns, in order (n_items of them): their ids,
        prompts, targets and subgroups are used. Only their instances and, for the order check,
        the rows of LLMs present in both are read.
    min_agreement : float
        Share of items on which an LLM present in both sources must agree to confirm the order.
    item_order : {"detect", "as_written"}
        With ``items`` whose ids are a data-parallel process order (the leaderboard's), ``"detect"``
        finds the process count that wrote each row by comparing it with ``items``' per-item success
        rates, and re-keys it (:mod:`assessors.data.item_order`); rows whose order cannot be told
        apart are dropped by name. ``"as_written"`` takes the columns to be ``items`` as they stand.

    Returns
    -------
    Results
        ``success`` of shape (n_models, n_items); without ``items``, ``prompt`` is NaN and
        ``subgroup`` = ``name``.
    """
    path = _npz_path(name, root, cache_dir, download)
    name = path.stem if str(name).endswith(".npz") and Path(name).exists() else name
    scores, models = _read_npz(path)
    n_items = scores.shape[1]
    scores, llms = _row_names(scores, models, path)
    success = check_binary(scores, path, llms, list(range(n_items)), row_offset=None)
    meta = {"path": str(path)}
    if items is None:
        instances = pd.DataFrame({"prompt": np.nan, "subgroup": name, "target": np.nan},
                                 index=pd.Index([f"{name}/{j}" for j in range(n_items)], name="instance_id"))
    else:
        instances = _check_items(items, n_items, path)
        if items.meta.get("prompt_files"):  # the items' prompt files name these instances
            meta["prompt_files"] = dict(items.meta["prompt_files"])
        if item_order == "detect":
            success, llms, meta["item_order"] = _align_to(success, llms, items, path)
        elif item_order != "as_written":
            raise ConfigError(f"item_order={item_order!r}: use 'detect' or 'as_written'")
        meta["item_order_check"] = check_item_order(success, llms, items, path, min_agreement)
    log.info("score_matrix %s: %d models x %d items%s%s", name, len(llms), n_items,
             "" if models is not None else " (anonymous models)", "" if items is None else f", items of {items.name}")
    return Results(instances=instances, llms=llms, success=success, name=f"score_matrix:{name}", meta=meta)


def _npz_path(name: str, root, cache_dir, download: bool) -> Path:
    """``name`` itself when it is an existing ``.npz`` file, else ``<data>/score_matrices/<name>.npz``."""
    if str(name).endswith(".npz") and Path(name).exists():
        return Path(name)
    base = locate(NAME, root=root, cache_dir=cache_dir, download=download)
    path = base / f"{name}.npz"
    if not path.exists():
        raise DataError(f"{path}: not found; available: {sorted(p.stem for p in base.glob('*.npz'))}")
    return path


def _read_npz(path: Path) -> tuple[np.ndarray, np.ndarray | None]:
    """The 2-D ``scores`` array (models x items) and the ``models`` names (None when absent)."""
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
    return scores, models


def _row_names(scores: np.ndarray, models, path: Path) -> tuple[np.ndarray, list[str]]:
    """Row names (``model_000``... without ``models``), checked; exact repeats of a row under the
    same name dropped."""
    n_models = scores.shape[0]
    if models is None:
        return scores, [f"model_{i:03d}" for i in range(n_models)]
    llms = [str(m) for m in models]
    empty = [i for i, m in enumerate(llms) if not m.strip()]
    if empty:
        raise DataError(f"{path}: empty model name at row {empty[0]} of 'models' ({len(empty)} in all)")
    if len(llms) != n_models:
        raise DataError(f"{path}: 'models' has {len(llms)} names for {n_models} score rows")
    return _dedupe(scores, llms, path)


def _check_items(items: Results, n_items: int, path: Path) -> pd.DataFrame:
    """A copy of ``items``' instances, which must be exactly this matrix's ``n_items`` columns."""
    if len(items.instances) != n_items:
        raise DataError(f"{path}: {n_items} score columns, but {items.name} has {len(items.instances)} items "
                        f"({items.meta.get('subtasks', '')}); the columns must be exactly those items, in "
                        "order: select the matching files")
    return items.instances.copy()


def _align_to(success: np.ndarray, llms: list[str], items: Results, path: Path):
    """Re-key each row to ``items``' columns, subgroup by subgroup; drop undetermined rows by name."""
    groups = items.instances["subgroup"].to_numpy()
    cols = [np.flatnonzero(groups == g) for g in dict.fromkeys(groups)]
    ids = [[str(i).rsplit("/", 1)[-1] for i in items.instances.index[c]] for c in cols]
    with np.errstate(all="ignore"):
        ref = [np.nanmean(items.success[:, c], axis=0) for c in cols]
    aligned = align_rows([success[:, c] for c in cols], ids, reference=ref)
    if aligned is None:
        log.info("%s: %s's item ids are not a process order; rows used as written", path.name, items.name)
        return success, llms, {}
    values, det = aligned
    out = np.empty_like(success, dtype=float)
    for c, v in zip(cols, values):
        out[:, c] = v
    keep = np.array([st != "undetermined" for st in det.status])
    return out[keep].astype(np.float32), [m for m, k in zip(llms, keep) if k], _order_report(det, keep, llms, items, path)


def _order_report(det, keep: np.ndarray, llms: list[str], items: Results, path: Path) -> dict:
    """Log the rows per detected process count and the dropped rows; the report for ``meta``."""
    counts = {int(r): int((det.ranks == r).sum()) for r in np.unique(det.ranks[keep])}
    log.warning("%s: rows re-keyed to %s's item order by the process count that wrote them (rows per "
                "count: %s)", path.name, items.name, counts)
    dropped = [m for m, k in zip(llms, keep) if not k]
    if dropped:
        log.warning("%s: dropped %d row(s) whose item order cannot be told from the data: %s", path.name,
                    len(dropped), ", ".join(dropped))
    return {"ranks": dict(zip(llms, det.ranks.tolist())), "excluded": {m: "item order undetermined" for m in dropped}}


def _key(llm: str) -> str:
    """Leaderboard CSVs spell ``org/name`` as ``org__name``."""
    return llm.replace("/", "__")


def check_item_order(success: np.ndarray, llms: list[str], items: Results, path: Path,
                     min_agreement: float = 0.99) -> dict[str, float]:
    """Check that the columns of ``success`` are ``items``' instances, on the LLMs both hold.

    An LLM evaluated once gives the same 0/1 answers in both sources, so under the right order
    it agrees on (nearly) every item, and under a wrong one on about as many as chance gives.

    Returns
    -------
    dict
        Share of agreeing items per LLM present in both sources (non-constant rows only).

    Raises
    ------
    DataError
        When LLMs are shared but none agrees on ``min_agreement`` of the items.
    """
    theirs = {_key(m): i for i, m in enumerate(items.llms)}
    agree = {}
    for i, m in enumerate(llms):
        j = theirs.get(_key(m))
        if j is None or np.nanstd(success[i]) == 0:  # a constant row agrees under any order
            continue
        other = items.success[j]
        keep = ~np.isnan(other) & ~np.isnan(success[i])
        agree[m] = float(np.mean(success[i][keep] == other[keep])) if keep.any() else float("nan")
    if not agree:
        log.warning("%s: no LLM is in both this matrix and %s: the item order cannot be checked", path, items.name)
        return agree
    ok = [m for m, a in agree.items() if a >= min_agreement]
    if not ok:
        raise DataError(f"{path}: the item order does not match {items.name}: none of the {len(agree)} LLMs in both "
                        f"agrees on {min_agreement:.0%} of the items (best {max(agree.values()):.1%}); the columns "
                        "are misaligned")
    bad = sorted(m for m in agree if m not in ok)
    log.info("%s: item order confirmed by %d of %d LLMs present in both (agreement >= %.0f%%)",
             path.name, len(ok), len(agree), 100 * min_agreement)
    if bad:
        log.warning("%s: %d LLMs in both disagree with %s on many items (%s); their rows in one of the two "
                    "sources are in another item order. This matrix's rows are used.", path.name, len(bad),
                    items.name, ", ".join(f"{m} {agree[m]:.0%}" for m in bad))
    return agree


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
