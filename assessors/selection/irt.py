"""Multidimensional two-parameter logistic (2PL) IRT model, shared by selection and estimation.

The model (as in tinyBenchmarks, Polo et al. 2024) says LLM ``i`` answers item ``j`` correctly
with probability ``sigmoid(ability_i . discrimination_j - difficulty_j)``, with an ability and a
discrimination vector of dimension ``dims`` (10 by default).

Why our own PyTorch fit instead of a library:

* ``py-irt`` (used by tinyBenchmarks) fits by Pyro SVI for thousands of epochs, needs ``pyro-ppl``
  and a JSON-lines data set, and takes minutes per fit; the benchmark-prediction harness needs
  one fit per source split (hundreds of fits).
* ``girth`` estimates multidimensional models by marginal ML with quadrature over the ability
  space, which is exponential in ``dims`` and impractical at 10 dimensions.

So the fit here is a joint maximum a posteriori (MAP) estimate with Gaussian priors
(``ability ~ N(0, I)``, ``discrimination ~ N(0, prior_discrimination^2 I)``,
``difficulty ~ N(0, prior_difficulty^2)``), full-batch L-BFGS over the observed cells only
(missing cells are simply left out of the likelihood). Ability for a *new* LLM with items
fixed (:meth:`MultidimIRT.ability_for`) is the project's one batched Newton MAP solve
(:func:`assessors.irt_math.map_ability`), the one the latent assessor's posterior uses.

Note on parametrisation: py-irt subtracts the difficulty once per dimension (logit
``sum_d (a_d theta_d - b)``); we subtract it once, so our ``difficulty_`` equals ``dims`` times
theirs. Predictions are the same family.
"""
from __future__ import annotations

import logging

import numpy as np
import torch
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from assessors.errors import DataError
from assessors.irt_math import check_answers, map_ability, sigmoid

log = logging.getLogger(__name__)


def _check_success(success: np.ndarray, what: str = "success") -> np.ndarray:
    """``success`` as a float64 (n_llms, n_items) matrix of 0, 1 and NaN (:func:`assessors.irt_math.check_answers`)."""
    s = np.asarray(success, dtype=np.float64)
    if s.ndim != 2:
        raise DataError(f"{what}: expected a 2-D (n_llms, n_items) matrix, got shape {s.shape}")
    return check_answers(s, what)


class MultidimIRT(BaseEstimator):
    """Multidimensional 2PL IRT fitted by MAP (PyTorch L-BFGS).

    Parameters
    ----------
    dims : int
        Dimension of abilities and discriminations (tinyBenchmarks uses 10).
    prior_discrimination, prior_difficulty, prior_ability : float
        Standard deviations of the Gaussian priors (they act as L2 penalties). The tight
        discrimination prior matters: with 10 dimensions and few LLMs per item the joint MAP
        otherwise overfits (simulation: Spearman of difficulties 0.91 at 1.0 vs 0.96 at 0.5).
    max_iter : int
        Maximum L-BFGS iterations.
    tol : float
        Stop when the mean negative log posterior changes less than this.
    seed : int
        Seed of the random initialisation; the fit is deterministic given it.
    num_threads : int or None
        Torch threads during the fit (None: leave the global setting).

    Attributes
    ----------
    discrimination_ : ndarray of shape (n_items, dims)
    difficulty_ : ndarray of shape (n_items,)
    ability_ : ndarray of shape (n_llms, dims)
    n_iter_ : int
    loss_ : float
        Final mean negative log posterior per observed cell.
    """

    def __init__(self, dims: int = 10, prior_discrimination: float = 0.5, prior_difficulty: float = 3.0,
                 prior_ability: float = 1.0, max_iter: int = 100, tol: float = 1e-7, seed: int = 0,
                 num_threads: int | None = 1):
        self.dims = dims
        self.prior_discrimination = prior_discrimination
        self.prior_difficulty = prior_difficulty
        self.prior_ability = prior_ability
        self.max_iter = max_iter
        self.tol = tol
        self.seed = seed
        self.num_threads = num_threads

    # ------------------------------------------------------------------ fit
    def fit(self, success: np.ndarray, y=None) -> "MultidimIRT":
        """Fit item and LLM parameters.

        Parameters
        ----------
        success : ndarray of shape (n_llms, n_items), float with NaN for missing cells
        """
        s = _check_success(success)
        n, m = s.shape
        obs = ~np.isnan(s)
        if n < 2 or m < 2:
            raise DataError(f"IRT fit needs at least 2 LLMs and 2 items, got {s.shape}")
        empty_rows = np.flatnonzero(~obs.any(1))
        if empty_rows.size:
            raise DataError(f"IRT fit: LLM rows {empty_rows[:5].tolist()} have no observed cell")
        empty_cols = np.flatnonzero(~obs.any(0))
        if empty_cols.size:
            raise DataError(f"IRT fit: item columns {empty_cols[:5].tolist()} have no observed cell")

        gen = torch.Generator().manual_seed(int(self.seed))
        y = torch.as_tensor(np.nan_to_num(s), dtype=torch.float32)
        mask = torch.as_tensor(obs, dtype=torch.float32)
        n_obs = float(mask.sum())
        # Init: difficulty from the item's smoothed log-odds of failure, small random rest.
        p_item = (np.nansum(s, 0) + 0.5) / (obs.sum(0) + 1.0)
        b = torch.tensor(-np.log(p_item / (1 - p_item)), dtype=torch.float32).requires_grad_()
        a = (0.1 * torch.randn(m, self.dims, generator=gen)).requires_grad_()
        th = (0.1 * torch.randn(n, self.dims, generator=gen)).requires_grad_()
        params = [th, a, b]
        opt = torch.optim.LBFGS(params, lr=1.0, max_iter=self.max_iter, tolerance_change=self.tol,
                                tolerance_grad=1e-6, history_size=20, line_search_fn="strong_wolfe")
        bce = torch.nn.BCEWithLogitsLoss(reduction="none")
        state = {"loss": float("nan")}

        def closure():
            opt.zero_grad()
            logits = th @ a.T - b
            nll = (bce(logits, y) * mask).sum()
            prior = (0.5 * (th ** 2).sum() / self.prior_ability ** 2
                     + 0.5 * (a ** 2).sum() / self.prior_discrimination ** 2
                     + 0.5 * (b ** 2).sum() / self.prior_difficulty ** 2)
            loss = nll + prior  # summed, not a mean over cells: a mean stops L-BFGS after one step on large matrices
            loss.backward()
            state["loss"] = loss.item() / n_obs
            return loss

        # Small dense ops: one thread is faster than two contending ones on a shared machine.
        old_threads = torch.get_num_threads()
        if self.num_threads:
            torch.set_num_threads(int(self.num_threads))
        try:
            with torch.enable_grad():
                opt.step(closure)
        finally:
            torch.set_num_threads(old_threads)
        self.n_iter_ = int(opt.state[opt._params[0]].get("n_iter", 0))
        self.loss_ = state["loss"]
        self.ability_ = th.detach().numpy().astype(np.float64)
        self.discrimination_ = a.detach().numpy().astype(np.float64)
        self.difficulty_ = b.detach().numpy().astype(np.float64)
        # Empirical-Bayes prior for new LLMs: the joint MAP trades ability scale against the
        # discrimination prior, so N(0, I) would shrink new abilities far too much.
        self.ability_mean_ = self.ability_.mean(0)
        self.ability_cov_ = np.cov(self.ability_, rowvar=False).reshape(self.dims, self.dims) + 1e-3 * np.eye(self.dims)
        return self

    # ------------------------------------------------------------- predict
    def _check_fitted(self) -> None:
        check_is_fitted(self, "difficulty_", msg="MultidimIRT is not fitted yet; call fit(success) first")

    def item_parameters(self) -> np.ndarray:
        """Item embedding ``[discrimination, difficulty]`` of shape (n_items, dims + 1)."""
        self._check_fitted()
        return np.hstack([self.discrimination_, self.difficulty_[:, None]])

    def predict_success(self, ability: np.ndarray | None = None, item_idx=None) -> np.ndarray:
        """Success probabilities.

        Parameters
        ----------
        ability : ndarray of shape (k, dims), optional
            Abilities (defaults to the fitted ``ability_``).
        item_idx : array of int, optional
            Items to predict (defaults to all).

        Returns
        -------
        ndarray of shape (k, n_selected_items)
        """
        self._check_fitted()
        th = self.ability_ if ability is None else np.atleast_2d(np.asarray(ability, dtype=np.float64))
        sel = slice(None) if item_idx is None else np.asarray(item_idx, dtype=int)
        return sigmoid(th @ self.discrimination_[sel].T - self.difficulty_[sel])

    def ability_for(self, success: np.ndarray, item_idx, n_iter: int = 25) -> np.ndarray:
        """MAP ability of new LLMs from a few items, item parameters fixed.

        The prior is Gaussian with the mean and covariance of the fitted abilities.

        Parameters
        ----------
        success : ndarray of shape (k, len(item_idx)) or (len(item_idx),), NaN allowed
            The new LLMs' results on the items ``item_idx``.
        item_idx : array of int of length n_sub
            Positions of those items in the fitted item set.
        n_iter : int
            Newton iterations (the objective is strictly concave thanks to the prior).

        Returns
        -------
        ndarray of shape (k, dims)
        """
        self._check_fitted()
        item_idx = np.asarray(item_idx, dtype=int)
        s = _check_success(np.atleast_2d(success), "ability_for success")
        if s.shape[1] != item_idx.size:
            raise DataError(f"ability_for: success has {s.shape[1]} columns but item_idx has {item_idx.size} items")
        if item_idx.size and (item_idx.min() < 0 or item_idx.max() >= self.difficulty_.size):
            raise DataError(f"ability_for: item_idx out of range [0, {self.difficulty_.size})")
        return map_ability(self.discrimination_[item_idx], self.difficulty_[item_idx], s, self.ability_mean_,
                           np.linalg.inv(self.ability_cov_), n_iter=n_iter)
