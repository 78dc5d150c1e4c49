"""Random best-of-N selector: draw N random reference sets, keep the one the assessor likes best."""
from __future__ import annotations

import logging

import numpy as np
import pandas as pd
from sklearn.base import clone
from tqdm.auto import tqdm

from assessors.errors import ConfigError, DataError, InfeasibleError
from assessors.selection.base import Selector

log = logging.getLogger(__name__)


class RandomBestOfNSelector(Selector):
    """Best of ``n_draws`` uniformly random reference sets, judged on validation LLMs.

    Each draw fits ``assessor`` (a generic assessor; by default a single L2 logistic
    regression, to keep N fits affordable) with that reference set, scores validation AUC
    for every validation LLM, and the draw with the highest average win rate over
    validation LLMs is kept (ties: higher mean AUC, then the earlier draw), the same rule
    the paper uses to choose among combinations.

    Validation data come from :meth:`fit`'s ``validation`` argument (the pipeline passes
    the validation LLMs and instances). Without it, a pseudo-validation split is carved out
    of the training data: ``holdout_fraction`` of the training LLMs and of the candidates,
    both drawn with ``seed`` (the reference set is then drawn from the remaining candidates).

    Parameters
    ----------
    size : int
    seed : int
    n_draws : int
        N, the number of random sets tried (paper: 20).
    assessor : GenericAssessor
        Unfitted; cloned for every draw.
    holdout_fraction : float
        Pseudo-validation share when no validation data are given.

    Attributes
    ----------
    draw_scores_ : pandas.DataFrame of shape (n_draws, 2)
        ``win_rate`` and ``mean_val_auc`` of each draw.
    best_draw_ : int
    """

    def __init__(self, size: int = 100, seed: int = 0, n_draws: int = 20, assessor=None,
                 holdout_fraction: float = 0.2):
        super().__init__(size=size, seed=seed)
        self.n_draws = n_draws
        self.assessor = assessor
        self.holdout_fraction = holdout_fraction

    def _select(self, success, features, validation):
        if self.assessor is None:
            raise ConfigError("RandomBestOfNSelector needs an assessor (selector.assessor)")
        if features is None:
            raise ConfigError("RandomBestOfNSelector needs prompt features to fit the assessor")
        if self.n_draws < 1:
            raise ConfigError(f"RandomBestOfNSelector: n_draws must be >= 1, got {self.n_draws}")
        from assessors.metrics import per_llm_auc, rank_by_win_rate

        X = np.asarray(features, dtype=np.float32)
        rng = np.random.default_rng(self.seed)
        n_llms, n_cand = success.shape
        if validation is not None:  # the validation LLMs' reference vectors are read from S_val_cand per draw
            X_val, S_val, S_val_cand = (np.asarray(a, dtype=np.float32) for a in validation)
            if S_val_cand.shape[1] != n_cand:
                raise DataError(f"validation results on candidates have {S_val_cand.shape[1]} columns, expected {n_cand}")
            fit_llms, fit_cols, pool = np.arange(n_llms), np.arange(n_cand), np.arange(n_cand)
        else:
            n_hold_llm = max(1, int(round(self.holdout_fraction * n_llms)))
            n_hold_inst = max(1, int(round(self.holdout_fraction * n_cand)))
            if n_llms - n_hold_llm < 2 or n_cand - n_hold_inst < self.size + 2:
                raise DataError(
                    f"RandomBestOfNSelector: {n_llms} LLMs x {n_cand} candidates leave too little after holding "
                    f"out {self.holdout_fraction:.0%} for pseudo-validation with size {self.size}; pass validation data")
            hold_llm = rng.choice(n_llms, n_hold_llm, replace=False)
            hold_inst = rng.choice(n_cand, n_hold_inst, replace=False)
            fit_llms = np.setdiff1d(np.arange(n_llms), hold_llm)
            fit_cols = np.setdiff1d(np.arange(n_cand), hold_inst)
            pool = fit_cols
            X_val, S_val = X[hold_inst], success[np.ix_(hold_llm, hold_inst)]
            S_val_cand = success[hold_llm]
        X_fit, S_fit = X[fit_cols], success[np.ix_(fit_llms, fit_cols)]
        pos_in_fit = np.full(n_cand, -1)
        pos_in_fit[fit_cols] = np.arange(len(fit_cols))
        if self.size > len(pool):
            raise InfeasibleError(f"RandomBestOfNSelector: size {self.size} exceeds the {len(pool)} candidates left "
                                  "to draw from")

        draws, scores = [], {}
        for d in tqdm(range(self.n_draws), desc="random best-of-N draws", leave=False):
            idx = np.sort(rng.choice(pool, size=self.size, replace=False))
            draws.append(idx)
            model = clone(self.assessor).fit(X_fit, S_fit, pos_in_fit[idx])
            P = model.predict_proba(X_val, S_val_cand[:, idx])
            scores[d] = pd.Series(per_llm_auc(S_val, P), dtype=float)
        table = pd.DataFrame(scores).T  # draws x validation LLMs
        if table.notna().sum().sum() == 0:
            raise DataError("RandomBestOfNSelector: validation AUC is undefined for every validation LLM (one class only)")
        ranked = rank_by_win_rate(table)
        self.draw_scores_ = ranked.sort_index()  # in draw order
        self.best_draw_ = int(ranked.index[0])
        log.info("random best-of-%d: draw %d wins (win rate %.3f, mean val AUC %.3f)", self.n_draws, self.best_draw_,
                 *ranked.iloc[0].tolist())
        return draws[self.best_draw_]
