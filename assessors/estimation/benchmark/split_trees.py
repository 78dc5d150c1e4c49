"""Exact prediction of a boosted-tree generic assessor for every (target LLM, item) pair at once.

The generic assessor's row for a pair is ``[item part of item i, reference vector of target t]``.
Every split of a tree tests one column, so the indicator of reaching a leaf ``l`` is the product of
an item-side indicator ``I[i, l]`` (the splits on item columns along the leaf's path) and a
target-side one ``J[t, l]`` (the splits on reference columns). The model's margin for all pairs is
then one matrix product over the leaves of all trees::

    margin[t, i] = base + sum_l J[t, l] * value[l] * I[i, l]

These are the numbers the classifier's ``predict_proba`` gives on the ``k x n_items`` rows, without
building those rows (12k MMLU-Pro items x 100 targets x 5 cross-fitting folds is 2.4 GB of float32
rows a trial, and their tree traversal was most of the AIPW assessor's time). The item side is
computed once per fit; the target side, a few thousand comparisons, per call.
"""
from __future__ import annotations

import logging
from functools import cached_property

import numpy as np

from assessors.irt_math import sigmoid

log = logging.getLogger(__name__)

#: Largest difference in predicted probability, on a check sample of real rows, at which the
#: factorised margin counts as the classifier's own (float32 sums in another order differ by ~1e-6).
TOLERANCE = 1e-4


class SplitTrees:
    """Leaves of a binary-logistic tree ensemble, split into item-side and target-side conditions.

    Parameters
    ----------
    item_ind : ndarray of shape (n_leaves, n_items), float32
        1 where the item satisfies every item-column split on the leaf's path.
    ref_cond : tuple of arrays, each of shape (n_ref_conditions,)
        ``(leaf, column, threshold, goes_yes, missing_yes)`` of the reference-column splits.
    values : ndarray of shape (n_leaves,)
        Leaf values (margin contributions).
    base : float
        The ensemble's base margin.
    """

    def __init__(self, item_ind: np.ndarray, ref_cond: tuple, values: np.ndarray, base: float):
        self.item_ind = item_ind
        self.ref_cond = ref_cond
        self.values = values
        self.base = base

    @cached_property
    def _ref_plan(self) -> tuple | None:
        """The reference conditions' part of the leaf indicators, worked out once per model."""
        return _plan(*self.ref_cond, n_leaves=self.values.size)

    def margin(self, ref: np.ndarray) -> np.ndarray:
        """Margins (k, n_items) of ``k`` targets with filled reference vectors ``ref`` (k, n_ref)."""
        J = _apply(np.asarray(ref, dtype=np.float32), self._ref_plan, self.values.size).T
        return (J * self.values[None, :].astype(np.float32)) @ self.item_ind + np.float32(self.base)

    def predict(self, ref: np.ndarray) -> np.ndarray:
        """P(success) of shape (k, n_items) for filled reference vectors ``ref`` (k, n_ref)."""
        return sigmoid(self.margin(ref).astype(np.float64))


def split_trees(assessor, X: np.ndarray, check_ref: np.ndarray | None = None) -> SplitTrees | None:
    """The factorised form of a fitted generic assessor on items ``X`` (n_items, d), or None.

    None (callers then use ``assessor.predict_proba``) unless the classifier is an XGBoost binary
    logistic model on an item part that does not depend on the target (``embedding`` or
    ``similarity`` instance features), and its factorised probabilities agree with the
    classifier's own on a sample of rows (``check_ref`` (k, n_ref): reference vectors to check
    with, NaN allowed; default: the training fill).
    """
    clf = getattr(assessor, "classifier_", None)
    # only a boosted-tree classifier factorises (the classifier first: an assessor without one, e.g. the
    # latent model, has no pair rows either)
    if not hasattr(clf, "get_booster"):
        return None
    X = np.asarray(X, dtype=np.float32)
    # reference vectors of a few real rows, for the base margin and the check that the factorisation is the classifier
    R = assessor.reference_fill_[None, :] if check_ref is None else np.asarray(check_ref, dtype=np.float32)[:4]
    rows = assessor.pair_rows(X, R)
    if rows.mode not in ("embedding", "similarity"):  # the item part must not depend on the target
        return None
    return factorise(clf, rows.inst, rows.ref)


def factorise(clf, inst: np.ndarray, ref: np.ndarray) -> SplitTrees | None:
    """The factorised form of a fitted classifier whose rows are ``[inst[i], ref[t]]``, or None.

    Parameters
    ----------
    clf : fitted classifier
        None is returned unless it is an XGBoost binary logistic model (no early stopping, unnamed
        features) whose factorised margins agree with its own on a sample of rows.
    inst : ndarray of shape (n_items, f)
        The item part of the rows.
    ref : ndarray of shape (k, n_ref)
        Target parts of a few real rows (at least one), for the base margin and the check.
    """
    if not hasattr(clf, "get_booster"):
        return None
    booster = clf.get_booster()
    if clf.get_params().get("objective") != "binary:logistic" or booster.feature_names is not None \
            or getattr(clf, "n_classes_", 2) != 2 or _early_stopped(clf):
        return None
    inst, ref = np.asarray(inst, dtype=np.float32), np.asarray(ref, dtype=np.float32)
    leaves = _leaf_paths(booster.trees_to_dataframe())
    if leaves is None:
        return None
    values, cond = leaves
    f = inst.shape[1]
    on_item = cond[1] < f
    item_ind = _indicator(inst, *(c[on_item] for c in cond), n_leaves=values.size)
    ref_cond = tuple(c[~on_item] for c in cond)
    ref_cond = (ref_cond[0], ref_cond[1] - f, *ref_cond[2:])
    model = SplitTrees(item_ind, ref_cond, values, 0.0)
    items = np.linspace(0, len(inst) - 1, min(len(inst), 64)).astype(int)
    rows = np.hstack([np.tile(inst[items], (len(ref), 1)), np.repeat(ref, items.size, axis=0)])
    true = clf.predict(rows, output_margin=True).reshape(len(ref), items.size)
    diff = true - model.margin(ref)[:, items]
    model.base = float(np.median(diff))
    if np.abs(diff - model.base).max() > TOLERANCE:
        log.warning("boosted-tree proxy: factorised trees differ from the classifier by %.2g; "
                    "predicting row by row", np.abs(diff - model.base).max())
        return None
    return model


def _early_stopped(clf) -> bool:
    """Whether the classifier predicts with fewer trees than it holds (early stopping)."""
    try:
        return clf.best_iteration is not None
    except AttributeError:  # XGBoost defines best_iteration only after early stopping
        return False


def _leaf_paths(df) -> tuple[np.ndarray, tuple] | None:
    """Leaf values (n_leaves,) and path conditions ``(leaf, column, threshold, goes_yes, missing_yes)``
    of an XGBoost ``trees_to_dataframe`` table (None if a split is not numeric on ``f<j>`` columns)."""
    nodes = {r.ID: r for r in df.itertuples(index=False)}
    values, cond = [], []
    for tree in df["Tree"].unique():
        stack = [(f"{tree}-0", [])]
        while stack:
            nid, path = stack.pop()
            r = nodes[nid]
            if r.Feature == "Leaf":
                cond += [(len(values), *c) for c in path]
                values.append(r.Gain)
                continue
            if not str(r.Feature).startswith("f") or not str(r.Feature)[1:].isdigit() or np.isnan(r.Split):
                return None
            j, miss_yes = int(r.Feature[1:]), r.Missing == r.Yes
            stack.append((r.Yes, path + [(j, r.Split, True, miss_yes)]))
            stack.append((r.No, path + [(j, r.Split, False, miss_yes)]))
    c = np.array(cond, dtype=np.float64).reshape(-1, 5)
    return np.asarray(values, dtype=np.float64), (c[:, 0].astype(int), c[:, 1].astype(int), c[:, 2],
                                                  c[:, 3].astype(bool), c[:, 4].astype(bool))


def _indicator(Z: np.ndarray, leaf, col, thr, goes_yes, miss_yes, n_leaves: int) -> np.ndarray:
    """(n_leaves, n) float32: 1 where row ``Z[i]`` passes every condition of the leaf (XGBoost's rule:
    ``x < threshold`` goes to ``Yes``, a missing ``x`` to the node's ``Missing`` branch)."""
    return _apply(Z, _plan(leaf, col, thr, goes_yes, miss_yes, n_leaves), n_leaves)


def _plan(leaf, col, thr, goes_yes, miss_yes, n_leaves: int) -> tuple | None:
    """What :func:`_indicator` computes from the conditions alone (None when there are none): the
    distinct splits ``nodes`` (column, threshold, missing goes yes), each condition's split and
    wanted outcome, and per leaf its conditions' rows (padded with an all-true row)."""
    if not leaf.size:
        return None
    order = np.argsort(leaf, kind="stable")
    leaf, col, thr, goes_yes, miss_yes = leaf[order], col[order], thr[order], goes_yes[order], miss_yes[order]
    # a node lies on the path of every leaf below it: test each distinct split once
    nodes, node = np.unique(np.column_stack([col, thr, miss_yes]), axis=0, return_inverse=True)
    _, starts, counts = np.unique(leaf, return_index=True, return_counts=True)
    pos = np.arange(leaf.size) - np.repeat(starts, counts)  # a condition's place on its leaf's path
    idx = np.full((n_leaves, pos.max() + 1), leaf.size)
    idx[leaf, pos] = np.arange(leaf.size)
    return (nodes[:, 0].astype(int), nodes[:, 1].astype(np.float32)[:, None], nodes[:, 2].astype(bool)[:, None],
            node.ravel(), goes_yes[:, None], idx)


def _apply(Z: np.ndarray, plan: tuple | None, n_leaves: int) -> np.ndarray:
    """:func:`_indicator` of rows ``Z`` (n, f) from the conditions' :func:`_plan`."""
    n = Z.shape[0]
    if plan is None:
        return np.ones((n_leaves, n), dtype=np.float32)
    cols, thr, miss_yes, node, goes_yes, idx = plan
    x = np.ascontiguousarray(Z.T)[cols]  # (n_nodes, n)
    yes = x < thr
    nan = np.isnan(x)
    if nan.any():
        yes = np.where(nan, miss_yes, yes)
    # rows: each condition's outcome, then an all-true row that pads leaves with shorter paths
    ok = np.vstack([yes[node] == goes_yes, np.ones((1, n), dtype=bool)])
    out = ok[idx[:, 0]]
    for j in range(1, idx.shape[1]):  # at most the tree depth: an AND of whole rows
        out &= ok[idx[:, j]]
    return out.astype(np.float32)
