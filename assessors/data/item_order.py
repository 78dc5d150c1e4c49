"""Recover the item order of per-item results written by data-parallel evaluation runs.

An evaluation harness that splits a benchmark over ``r`` processes gives process ``k`` the items
``k, k + r, k + 2r, ...`` and concatenates the processes' outputs, so the row it writes holds the
items in the order ``interleaved_positions(n, r)``. A results table whose columns name items in one
such order (the Open LLM Leaderboard v2 files name them in the two-process order ``0, 2, 4, ..., 1,
3, ...``) is only right for the rows written with that many processes; rows written with 1, 4 or 8
processes hold other items under the same column names.

The number of processes of each row is not recorded, but the data says it: an LLM's successes
line up with the other LLMs' (easy items are easy for everyone) only in the right order. For each
(LLM, benchmark) row this module tries every candidate process count and keeps the one whose
re-keyed row correlates best with the leave-one-out consensus of the other rows; it iterates,
because the consensus itself is built from re-keyed rows. The absolute order is anchored either by
a reference per-item success rate in the true order or, without one, by the column names being
right for the largest group of rows.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

#: Process counts tried by default (evaluation clusters run on 1-8 devices per node).
DEFAULT_CANDIDATES = (1, 2, 3, 4, 5, 6, 7, 8)


def interleaved_positions(n_items: int, n_ranks: int) -> np.ndarray:
    """Item index held at each position of a row written by ``n_ranks`` processes.

    Returns
    -------
    ndarray of int, shape (n_items,)
        Entry ``j`` is the index (in the true item order) of the item at position ``j``.
    """
    return np.concatenate([np.arange(k, n_items, n_ranks) for k in range(n_ranks)])


def to_true_order(row: np.ndarray, n_ranks: int) -> np.ndarray:
    """Put a row written by ``n_ranks`` processes into the true item order.

    Parameters
    ----------
    row : ndarray, shape (n_items,) or (n_rows, n_items)
        Values in written (position) order.
    """
    out = np.empty_like(row)
    out[..., _positions(row.shape[-1], n_ranks)] = row
    return out


@lru_cache(maxsize=256)
def _positions(n_items: int, n_ranks: int) -> np.ndarray:
    """:func:`interleaved_positions`, read-only and computed once per shape (detection re-keys every
    row for every candidate many times)."""
    pos = interleaved_positions(n_items, n_ranks)
    pos.flags.writeable = False
    return pos


@dataclass
class OrderDetection:
    """Per-row result of :func:`detect_ranks`.

    Attributes
    ----------
    ranks : ndarray of int, shape (n_rows,)
        Chosen process count per row; 0 where the row is undetermined (see ``status``).
    scores : ndarray, shape (n_rows, n_candidates)
        Mean correlation with the leave-one-out consensus per candidate (NaN: no signal).
    candidates : tuple of int
        The process counts tried, in column order of ``scores``.
    column_ranks : int
        The process count whose order the column names follow.
    status : list of str, length n_rows
        ``"ok"``, ``"order-free"`` (every block constant: any order gives the same row) or
        ``"undetermined"`` (the best candidate is not clearly better than the next one).
    """

    ranks: np.ndarray
    scores: np.ndarray
    candidates: tuple[int, ...]
    column_ranks: int = 0
    status: list[str] = field(default_factory=list)

    @property
    def margin(self) -> np.ndarray:
        """Best minus second-best score per row, shape (n_rows,) (NaN without two scores)."""
        s = np.sort(np.where(np.isnan(self.scores), -np.inf, self.scores), axis=1)
        with np.errstate(invalid="ignore"):
            m = s[:, -1] - s[:, -2]
        return np.where(np.isfinite(m), m, np.nan)


def _rows_to_true_order(block: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    """Each row of ``block`` (n_rows, n_items) in the true item order of its process count ``ranks`` (n_rows,)."""
    out = np.empty_like(block)
    for r in np.unique(ranks):
        rows = ranks == r
        out[rows] = to_true_order(block[rows], int(r))
    return out


def _nan_corr(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson correlation of each row of ``x`` (..., k, n) with ``y`` (..., 1, n) or (n,) over the positions
    where both are finite, shape (..., k); NaN for a row with fewer than 3 such positions or a constant side."""
    ok = np.isfinite(x) & np.isfinite(y)
    n = ok.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        a = np.where(ok, x - (np.where(ok, x, 0.0).sum(axis=-1) / n)[..., None], 0.0)
        b = np.where(ok, y - (np.where(ok, y, 0.0).sum(axis=-1) / n)[..., None], 0.0)
        den = np.sqrt((a * a).sum(axis=-1) * (b * b).sum(axis=-1))
        r = (a * b).sum(axis=-1) / den
    return np.where((n >= 3) & (den > 0), r, np.nan)


def _consensus(true_blocks: list[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per block, the nan-aware column sums and counts over rows, shapes (n_items_b,)."""
    return [(np.nansum(b, axis=0), np.isfinite(b).sum(axis=0)) for b in true_blocks]


def _block_scores(block, true_block, cons, candidates, reference) -> tuple[np.ndarray, np.ndarray]:
    """Every row's correlation per candidate in one block, (n_rows, n_candidates), and its finite cells
    per row, (n_rows,) (0 where the row is constant or has fewer than 3: the same in every order)."""
    size = np.isfinite(block).sum(axis=1)
    with np.errstate(invalid="ignore"):
        used = size >= 3
        used[used] = np.nanmax(block[used], axis=1) != np.nanmin(block[used], axis=1)
    if reference is not None:
        target = reference
    else:  # leave each row out, so it is not compared with itself
        s, c = cons
        with np.errstate(invalid="ignore", divide="ignore"):
            target = ((s - np.nan_to_num(true_block[used])) / (c - np.isfinite(true_block[used])))[:, None, :]
    # every row's re-keyed rows for every candidate at once: (n_rows, n_candidates, n_items)
    stacked = np.stack([to_true_order(block[used], r) for r in candidates], axis=1)
    scores = np.full((len(block), len(candidates)), np.nan)
    scores[used] = _nan_corr(stacked, target)
    return scores, np.where(used, size, 0)


def _row_scores(per_block: list[tuple[np.ndarray, np.ndarray]], i: int, n_candidates: int) -> tuple[np.ndarray, float]:
    """Row ``i``'s mean correlation per candidate over its non-constant blocks (``per_block``:
    :func:`_block_scores` of each block), and its null standard error."""
    scores = np.full(n_candidates, np.nan)
    mine = [(sc[i], size[i]) for sc, size in per_block if size[i]]
    if mine:
        with np.errstate(all="ignore"):
            arr = np.array([sc for sc, _ in mine], dtype=float)
            if np.isfinite(arr).any():
                scores = np.nanmean(arr, axis=0)
    # a correlation of unrelated rows has sd ~ 1/sqrt(n); the mean of k such has sqrt(sum 1/n) / k
    sizes = [n for _, n in mine]
    se = float(np.sqrt(np.sum(1.0 / np.asarray(sizes, float))) / len(sizes)) if sizes else np.nan
    return scores, se


def detect_ranks(blocks: list[np.ndarray], header_ranks: int, candidates=DEFAULT_CANDIDATES,
                 reference: list[np.ndarray] | None = None, min_margin: float = 0.05,
                 z: float = 3.0, max_iter: int = 10) -> OrderDetection:
    """Find, for each row, the process count that wrote it.

    Parameters
    ----------
    blocks : list of ndarray, each shape (n_rows, n_items_b)
        One block per subtask of the same benchmark (one evaluation run per row), values 0/1/NaN in
        written order. Every block has the same rows.
    header_ranks : int
        The process count whose order the column names follow (the starting guess for every row).
    candidates : sequence of int
        Process counts to try.
    reference : list of ndarray, each shape (n_items_b,), optional
        Per-item success rates in the true order (e.g. from rows already re-keyed). When given, rows
        are compared with it instead of with each other.
    min_margin : float
        A row whose best candidate beats the second by less than this, or by less than ``z`` null
        standard errors of its score (what unrelated rows give), is ``"undetermined"``.
    z : float
        See ``min_margin``.
    max_iter : int
        Consensus refinements (stops early when no row changes).

    Returns
    -------
    OrderDetection
    """
    candidates = tuple(int(c) for c in candidates)
    if header_ranks not in candidates:
        candidates = (header_ranks, *candidates)
    n_rows = blocks[0].shape[0]
    ranks = np.full(n_rows, header_ranks)
    scores = np.full((n_rows, len(candidates)), np.nan)
    for _ in range(max(1, max_iter if reference is None else 1)):
        true_blocks = [_rows_to_true_order(b, ranks) for b in blocks]
        cons = _consensus(true_blocks)
        per_block = [_block_scores(b, tb, cb, candidates, None if reference is None else reference[k])
                     for k, (b, tb, cb) in enumerate(zip(blocks, true_blocks, cons))]
        rows = [_row_scores(per_block, i, len(candidates)) for i in range(n_rows)]
        scores = np.stack([sc for sc, _ in rows])
        se = np.array([e for _, e in rows])
        best = np.where(np.isnan(scores).all(axis=1), header_ranks,
                        np.asarray(candidates)[np.nanargmax(np.nan_to_num(scores, nan=-np.inf), axis=1)])
        if np.array_equal(best, ranks):
            break
        ranks = best
    det = OrderDetection(ranks=ranks.copy(), scores=scores, candidates=candidates, column_ranks=header_ranks)
    margin = det.margin
    for i in range(n_rows):
        if np.isnan(scores[i]).all():
            det.status.append("order-free")
        elif not margin[i] >= max(min_margin, z * se[i]):
            det.status.append("undetermined")
            det.ranks[i] = 0
        else:
            det.status.append("ok")
    return det


def header_ranks(item_ids) -> int | None:
    """The process count whose written order the column names follow, or None.

    Parameters
    ----------
    item_ids : sequence of str or int, length n_items
        Column names; only names that are the integers ``0 .. n_items - 1`` can be checked.
    """
    try:
        ids = np.array([int(str(i)) for i in item_ids])
    except ValueError:
        return None
    n = len(ids)
    if n == 0 or not np.array_equal(np.sort(ids), np.arange(n)):
        return None
    for r in DEFAULT_CANDIDATES:
        if np.array_equal(ids, interleaved_positions(n, r)):
            return r
    return None


def rekey(block: np.ndarray, ranks: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """Re-key written rows so that column ``j`` holds item ``columns[j]``.

    Parameters
    ----------
    block : ndarray, shape (n_rows, n_items)
        Rows in written order.
    ranks : ndarray of int, shape (n_rows,)
        Process count per row; rows with 0 (undetermined) become NaN.
    columns : ndarray of int, shape (n_items,)
        True item index named by each column.

    Returns
    -------
    ndarray, shape (n_rows, n_items), float
    """
    out = np.full(block.shape, np.nan)
    for i, r in enumerate(ranks):
        if r > 0:
            out[i] = to_true_order(block[i].astype(float), int(r))[columns]
    return out


def align_rows(blocks: list[np.ndarray], item_ids: list, reference: list[np.ndarray] | None = None,
               min_margin: float = 0.05) -> tuple[list[np.ndarray], OrderDetection] | None:
    """Detect each row's process count and re-key every block to its column names.

    Parameters
    ----------
    blocks : list of ndarray, each shape (n_rows, n_items_b)
        One benchmark's subtask blocks, rows as written, same rows in every block.
    item_ids : list of sequences
        Column names per block (the integers ``0 .. n_items_b - 1`` in one process order).
    reference : list of ndarray, optional
        Per-item success rates per block in **column** order (e.g. from already aligned results).
    min_margin : float
        See :func:`detect_ranks`.

    Returns
    -------
    (list of ndarray, OrderDetection) or None
        Aligned blocks (float, NaN for undetermined rows); None when the column names of some block
        are not a process order (nothing can be checked).
    """
    heads = [header_ranks(ids) for ids in item_ids]
    if any(h is None for h in heads) or len(set(heads)) != 1:
        return None
    head = heads[0]
    columns = [np.asarray([int(str(i)) for i in ids]) for ids in item_ids]
    ref_true = None
    if reference is not None:
        ref_true = []
        for ref, col in zip(reference, columns):
            t = np.empty(len(col))
            t[col] = ref
            ref_true.append(t)
    det = detect_ranks([np.asarray(b, dtype=float) for b in blocks], head, reference=ref_true,
                       min_margin=min_margin)
    return [rekey(b, det.ranks, col) for b, col in zip(blocks, columns)], det
