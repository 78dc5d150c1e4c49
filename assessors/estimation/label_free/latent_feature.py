"""The latent model's predicted accuracy of an unlabelled dataset, as a feature of the meta-model.

A unit is one (LLM, dataset) pair. Its feature is the latent assessor's posterior-predictive mean
success over the dataset's items given the LLM's grades on *other* datasets only: item parameters
come from source LLMs graded on the same items (e.g. the Open LLM Leaderboard's 77 LLMs on the
Big-Bench-Hard items), the LLM's abilities from a Laplace posterior
(:class:`~assessors.estimation.benchmark.latent_proxy.LatentProxy`). So the feature never uses a
label of the dataset it describes, which keeps the setting label-free. Datasets with no item the
source LLMs answered get NaN (the meta-model fills it).
"""
from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.utils.validation import check_is_fitted

from assessors.core.posterior import check_answers
from assessors.errors import DataError
from assessors.estimation.benchmark.latent_proxy import LatentProxy


def align_source(source, instance_ids) -> np.ndarray:
    """Source LLMs' grades on ``instance_ids``: shape (n_source_llms, len(instance_ids)), NaN for
    items the source data does not hold."""
    pos = {iid: j for j, iid in enumerate(source.instance_ids)}
    cols = np.array([pos.get(iid, -1) for iid in instance_ids])
    out = np.full((len(source.llms), len(cols)), np.nan)
    hit = cols >= 0
    out[:, hit] = source.success[:, cols[hit]]
    return out


class LatentAccuracy(BaseEstimator):
    """Posterior-predictive accuracy over chosen items from an LLM's grades on other items.

    Parameters
    ----------
    proxy : LatentProxy, optional
        The latent model (default ``LatentProxy()``).

    Attributes
    ----------
    items_ : ndarray of shape (n_described,)
        Item positions some source LLM answered: the only ones the model describes.
    proxy_ : LatentProxy
        Fitted on the source grades of ``items_``.
    """

    def __init__(self, proxy: LatentProxy | None = None):
        self.proxy = proxy

    def fit(self, source_success) -> "LatentAccuracy":
        """Fit item parameters on ``source_success`` (n_source_llms, n_items), NaN = not graded."""
        S = check_answers(source_success, "source grades")
        self.items_ = np.flatnonzero(np.isfinite(S).any(0))
        if len(self.items_) < 2 or S.shape[0] < 2:
            raise DataError(f"the latent feature needs source LLMs graded on the target items; {S.shape[0]} source "
                            f"LLMs share {len(self.items_)} items with them (check the ids of label_free.latent.source)")
        self.n_items_ = S.shape[1]
        self.proxy_ = clone(self.proxy if self.proxy is not None else LatentProxy()).fit(
            S[:, self.items_], None, np.arange(len(self.items_)))
        return self

    def predict(self, answers, targets) -> np.ndarray:
        """Mean predicted success over each row's target items.

        Parameters
        ----------
        answers : ndarray of shape (k, n_items)
            Visible 0/1 grades, NaN where hidden (a unit's own dataset must be hidden).
        targets : bool ndarray of shape (k, n_items)
            The items whose accuracy is predicted.

        Returns
        -------
        ndarray of shape (k,)
            NaN for a row none of whose target items the model describes.
        """
        check_is_fitted(self, "proxy_", msg="LatentAccuracy: call fit first")
        Y = check_answers(answers, "answers")
        T = np.asarray(targets, dtype=bool)
        if Y.shape != T.shape or Y.shape[1] != self.n_items_:
            raise DataError(f"answers {Y.shape} and targets {T.shape} must both be (k, {self.n_items_})")
        if np.any(T & np.isfinite(Y)):
            raise DataError("a unit's target items must be hidden (NaN) in its answers: the feature is label-free")
        p = self.proxy_.predict(Y[:, self.items_])  # (k, n_described)
        t = T[:, self.items_]
        n = t.sum(1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(n > 0, (p * t).sum(1) / n, np.nan)


def unit_features(model: LatentAccuracy, success: np.ndarray, llm_rows: np.ndarray, unit_datasets: np.ndarray,
                  item_datasets: np.ndarray, visible_datasets) -> np.ndarray:
    """The feature of each unit from its LLM's grades on ``visible_datasets`` other than its own.

    Parameters
    ----------
    success : ndarray of shape (n_llms, n_items)
    llm_rows : ndarray of shape (n_units,)
        Row of ``success`` of each unit.
    unit_datasets : ndarray of shape (n_units,)
    item_datasets : ndarray of shape (n_items,)
    visible_datasets : collection
        Datasets whose grades may be used (the training fold's).

    Returns
    -------
    ndarray of shape (n_units,)
    """
    seen = np.isin(item_datasets, list(visible_datasets))
    own = item_datasets[None, :] == np.asarray(unit_datasets)[:, None]  # (n_units, n_items)
    answers = np.where(seen[None, :] & ~own, success[llm_rows], np.nan)
    return model.predict(answers, own)
