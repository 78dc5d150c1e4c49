"""SR: synthetic regression of subgroup accuracy on subgroup features, cross-fitted over subgroups.

One row per (LLM, subgroup) cell; the target is the cell's direct estimate ``k / n`` weighted by
``n``. Features: the subgroup's mean prompt embedding (reduced by PCA, because a few dozen
subgroups cannot support hundreds of raw dimensions), LLM-specific intercepts (one-hot LLM, and
optionally the LLM's mean accuracy on the *training* subgroups, which trees use far more easily
than 78 sparse indicators), and optionally an assessor's mean predicted success for the cell.

Predictions are cross-fitted: subgroups are split into ``n_folds`` folds and each fold is
predicted by a model trained on the other folds only, so a cell's SR estimate never uses its own
observations. That independence is what the empirical-Bayes combination requires.
"""
from __future__ import annotations

import numpy as np
from sklearn.decomposition import PCA
from sklearn.model_selection import GridSearchCV, GroupKFold, ParameterGrid

from assessors.errors import ConfigError, DataError
from assessors.estimation.subgroup.base import SubgroupEstimator


def subgroup_folds(n_groups: int, n_folds: int, random_state=None) -> np.ndarray:
    """Random balanced assignment of subgroups to folds, shape (n_groups,) of ints."""
    if n_folds < 2 or n_folds > n_groups:
        raise ConfigError(f"n_folds={n_folds} needs 2 <= n_folds <= n_groups={n_groups}")
    rng = np.random.default_rng(random_state)
    return rng.permutation(np.arange(n_groups) % n_folds)


class SyntheticRegression(SubgroupEstimator):
    """XGBoost regression of subgroup accuracy with CV-tuned hyper-parameters, cross-fitted.

    Parameters
    ----------
    n_folds : int
        Cross-fitting folds over subgroups (2 as in the paper).
    n_components : int
        PCA components kept from the subgroup embeddings (capped by the training subgroups).
    llm_encoding : {"onehot", "mean", "both"}
        LLM intercepts as one-hot indicators, as the LLM's weighted mean accuracy on the training
        subgroups, or both.
    param_grid : dict
        XGBoost hyper-parameter grid searched by ``GroupKFold`` CV (groups = subgroups) on each
        training fold; a single combination skips the search.
    cv : int
        CV folds of the hyper-parameter search.
    xgb_params : dict
        Fixed ``xgboost.XGBRegressor`` arguments.
    random_state : int or None
        Seeds fold assignment and XGBoost.

    Attributes
    ----------
    estimate_ : ndarray of shape (n_llms, n_groups)
        Out-of-fold predictions (clipped to [0, 1]).
    fold_ : ndarray of shape (n_groups,)
        Fold of each subgroup.
    best_params_ : list of dict
        Selected hyper-parameters per fold.
    """

    def __init__(self, n_folds: int = 2, n_components: int = 8, llm_encoding: str = "both",
                 param_grid: dict | None = None, cv: int = 3, xgb_params: dict | None = None,
                 random_state: int | None = 0):
        self.n_folds = n_folds
        self.n_components = n_components
        self.llm_encoding = llm_encoding
        self.param_grid = param_grid
        self.cv = cv
        self.xgb_params = xgb_params
        self.random_state = random_state

    # ------------------------------------------------------------------ features
    def _design(self, cells, x_red, y, w, a, train_groups):
        """Feature rows for ``cells`` = (llm_idx, group_idx) arrays."""
        llm, grp = cells
        n_llms = y.shape[0]
        cols = []
        if x_red is not None:
            cols.append(x_red[grp])
        if self.llm_encoding in ("onehot", "both"):
            cols.append(np.eye(n_llms)[llm])
        if self.llm_encoding in ("mean", "both"):
            ww = w[:, train_groups]
            cols.append(((y[:, train_groups] * ww).sum(1) / ww.sum(1))[llm][:, None])
        if a is not None:
            cols.append(a[llm, grp][:, None])
        if not cols:
            raise DataError("SyntheticRegression has no features: pass group_features or use an LLM encoding")
        return np.hstack(cols)

    def _model(self):
        from xgboost import XGBRegressor

        params = {"n_estimators": 200, "max_depth": 3, "learning_rate": 0.05, "subsample": 0.9,
                  "n_jobs": 1, "verbosity": 0}
        params.update(self.xgb_params or {})
        return XGBRegressor(random_state=self.random_state, **params)

    def _fit(self, successes, trials, group_features, assessor_mean, answers=None):
        if self.llm_encoding not in ("onehot", "mean", "both"):
            raise ConfigError(f"llm_encoding must be onehot, mean or both, got {self.llm_encoding!r}")
        n_llms, n_groups = successes.shape
        y = successes / trials
        self.fold_ = subgroup_folds(n_groups, self.n_folds, self.random_state)
        pred = np.full(y.shape, np.nan)
        self.best_params_ = []
        for f in range(self.n_folds):
            test = np.flatnonzero(self.fold_ == f)
            train = np.flatnonzero(self.fold_ != f)
            x_red = None
            if group_features is not None:
                k = max(1, min(self.n_components, len(train) - 1, group_features.shape[1]))
                # PCA sees only training-fold subgroups, so a test subgroup's embedding is projected, not fitted.
                pca = PCA(n_components=k, random_state=0).fit(group_features[train])
                x_red = pca.transform(group_features)
            tr_cells = np.meshgrid(np.arange(n_llms), train, indexing="ij")
            tr_cells = (tr_cells[0].ravel(), tr_cells[1].ravel())
            te_cells = np.meshgrid(np.arange(n_llms), test, indexing="ij")
            te_cells = (te_cells[0].ravel(), te_cells[1].ravel())
            X_tr = self._design(tr_cells, x_red, y, trials, assessor_mean, train)
            X_te = self._design(te_cells, x_red, y, trials, assessor_mean, train)
            y_tr, w_tr = y[tr_cells], trials[tr_cells]
            model = self._model()
            grid = list(ParameterGrid(self.param_grid or {}))
            if len(grid) > 1:
                n_cv = min(self.cv, len(train))
                search = GridSearchCV(model, self.param_grid, cv=GroupKFold(n_splits=n_cv),
                                      scoring="neg_mean_squared_error", n_jobs=1)
                search.fit(X_tr, y_tr, groups=tr_cells[1], sample_weight=w_tr)
                model, best = search.best_estimator_, search.best_params_
            else:
                best = grid[0] if grid else {}
                model.set_params(**best).fit(X_tr, y_tr, sample_weight=w_tr)
            self.best_params_.append(best)
            pred[te_cells] = model.predict(X_te)
        return np.clip(pred, 0.0, 1.0), np.full(y.shape, np.nan), np.full(y.shape, np.nan)
