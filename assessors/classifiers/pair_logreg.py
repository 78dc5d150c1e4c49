"""Logistic regression that fits the generic assessor's (LLM, instance) rows without building them.

A generic row is ``[x_i, r_l]`` (or ``[x_i, x_i * r_l, r_l]`` with interactions): instance
features joined to an LLM's reference vector. A linear logit over such a row splits into an
instance term, an LLM term and, with interactions, a bilinear term::

    z(l, i) = x_i . w_x + r_l . w_r + x_i^T diag(w_xr) r_l + b

so the loss and its gradient need products with the small instance matrix (n_instances x f)
and reference matrix (n_llms x k), never with the (n_llms * n_instances) x width cross product
that scikit-learn's solvers need as a dense float64 copy. The objective is scikit-learn's
(``C`` x summed log-loss + L2/2 or L1 penalty, intercept not penalised), minimised by SciPy's
L-BFGS-B; L1 is handled by splitting ``w = w+ - w-`` with ``w+/- >= 0``, which makes the
penalty linear and smooth.

Ordinary (n, d) arrays are fitted as the special case of one LLM with no reference vector,
so the same config also works for the specific assessor. An evaluation costs one pass over the
(n_llms x n_instances) grid, plus an (n_llms x k x n_instances) product with interactions,
so pairs that fill only a small part of that grid would be cheaper materialised.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import torch
from scipy.optimize import minimize
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted
from torch.nn.functional import softplus

from assessors.classifiers.rows import as_row_source, take
from assessors.errors import DataError
from assessors.irt_math import sigmoid
from assessors.tags import with_capabilities
from assessors.threads import torch_threads


@dataclass
class _Design:
    """Factors of a row matrix: ``inst`` (n_inst, f), ``ref`` (n_llm, k), pair positions, blocks.

    The loss is evaluated on the (n_llm, n_inst) grid of cells rather than per pair: the
    generic assessor's pairs fill that grid (all of it for complete results), a cell's pairs
    are summarised by their label weights, and a grid needs no gather or scatter. The
    element-wise work runs in torch, whose softplus is much faster than NumPy's.
    """

    inst: torch.Tensor
    ref: torch.Tensor
    llm_idx: np.ndarray
    inst_idx: np.ndarray
    interaction: bool

    @property
    def width(self) -> int:
        f, k = self.inst.shape[1], self.ref.shape[1]
        return f + k + (f if self.interaction else 0)

    def split(self, w: torch.Tensor):
        """Coefficient blocks ``(w_x, w_xr or None, w_r)`` in the row's column order."""
        f = self.inst.shape[1]
        if self.interaction:
            return w[:f], w[f : 2 * f], w[2 * f :]
        return w[:f], None, w[f:]

    def grid_logits(self, w: torch.Tensor, b: float) -> torch.Tensor:
        """Linear predictor of every (LLM, instance) cell -> (n_llm, n_inst) float64."""
        w_x, w_xr, w_r = self.split(w)
        z = (self.inst @ w_x)[None, :] + b
        if w_r.numel():
            z = z + (self.ref @ w_r)[:, None]
        if w_xr is not None:
            z = z + (self.ref * w_xr) @ self.inst.T
        return z

    def grid_rmatvec(self, G: torch.Tensor) -> torch.Tensor:
        """``rows.T @ g`` where ``G`` (n_llm, n_inst) sums ``g`` over each cell's pairs -> (width,)."""
        parts = [self.inst.T @ G.sum(dim=0)]
        if self.interaction:
            # sum over cells of g * x_i * r_l = column sums of x * (G^T ref)
            parts.append(((G.T @ self.ref) * self.inst).sum(dim=0))
        if self.ref.shape[1]:
            parts.append(self.ref.T @ G.sum(dim=1))
        return torch.cat(parts)

    def cell_sums(self, v: np.ndarray) -> torch.Tensor:
        """Sum a per-pair vector ``v`` (n_pairs,) into its cells -> (n_llm, n_inst)."""
        n_llm, n_inst = len(self.ref), len(self.inst)
        cells = self.llm_idx * n_inst + self.inst_idx
        return torch.from_numpy(np.bincount(cells, v, minlength=n_llm * n_inst).reshape(n_llm, n_inst))


def _design(X) -> _Design:
    """Factor a row source: the generic assessor's pair rows, or any (n, d) matrix."""
    f64 = lambda a: torch.from_numpy(np.ascontiguousarray(a, dtype=np.float64))  # noqa: E731
    if all(hasattr(X, a) for a in ("inst", "ref", "llm_idx", "inst_idx", "mode")):
        llm_idx = np.asarray(X.llm_idx, np.int64)
        ref = X.ref
        if X.mode == "none":
            # no reference vector: every LLM's row for an instance is the same row, so one cell
            ref, llm_idx = np.zeros((1, 0)), np.zeros_like(llm_idx)
        d = _Design(f64(X.inst), f64(ref), llm_idx, np.asarray(X.inst_idx, np.int64),
                    X.mode == "similarity_interaction")
        if d.width != X.shape[1]:
            raise DataError(f"pair rows of width {X.shape[1]} do not factor into blocks of width {d.width}")
        return d
    X = as_row_source(X)
    dense = X if isinstance(X, np.ndarray) else take(X, np.arange(len(X)))
    n = len(dense)
    return _Design(f64(dense), torch.zeros((1, 0), dtype=torch.float64), np.zeros(n, np.int64), np.arange(n), False)


class PairLogisticRegression(ClassifierMixin, BaseEstimator):
    """L1- or L2-penalised logistic regression on dense rows or factored (LLM, instance) rows.

    Minimises ``C * sum_p s_p * logloss_p + P(w)`` with ``P = ||w||^2 / 2`` (``penalty="l2"``)
    or ``||w||_1`` (``"l1"``); the intercept is not penalised. This is scikit-learn's
    ``LogisticRegression`` objective (with liblinear, sklearn's L1 also penalises the intercept).

    Parameters
    ----------
    C : float
        Inverse regularisation strength.
    penalty : {"l2", "l1"}
    tol : float
        Stop when the projected gradient of the objective divided by the summed sample
        weight is below ``tol`` (SciPy's ``gtol``, as scikit-learn's lbfgs solver).
    max_iter : int
        L-BFGS-B iterations; a :class:`~sklearn.exceptions.ConvergenceWarning` says when hit.
    num_threads : int or None
        Torch threads while fitting (None: torch's setting). One by default: an evaluation is a
        few milliseconds of small tensor work, and on this 2-core machine with a sweep running it
        took 12 ms with one thread and 54 ms with two. The setting is process-wide, so fits run in
        parallel threads should pass None.

    Attributes
    ----------
    coef_ : ndarray of shape (1, n_features)
        In the rows' column order, so it applies to the materialised rows too.
    intercept_ : ndarray of shape (1,)
    classes_ : ndarray of shape (2,)
    n_iter_ : ndarray of shape (1,)
    """

    def __sklearn_tags__(self):  # the generic assessor hands it its lazy pair rows, not a dense copy
        return with_capabilities(super().__sklearn_tags__(), accepts_row_source=True)

    def __init__(self, C: float = 1.0, penalty: str = "l2", tol: float = 1e-4, max_iter: int = 1000,
                 num_threads: int | None = 1):
        self.C = C
        self.penalty = penalty
        self.tol = tol
        self.max_iter = max_iter
        self.num_threads = num_threads

    def fit(self, X, y, sample_weight=None) -> "PairLogisticRegression":
        """Fit on rows ``X`` (n, d) (array or row source) with 0/1 labels ``y`` (n,)."""
        if self.penalty not in ("l1", "l2"):
            raise ValueError(f"penalty must be 'l1' or 'l2', got {self.penalty!r}")
        if not self.C > 0:
            raise ValueError(f"C must be positive, got {self.C!r}")
        d = _design(X)
        y = np.asarray(y)
        if y.shape != (len(d.inst_idx),):
            raise DataError(f"y has shape {y.shape}; expected ({len(d.inst_idx)},), one label per row")
        self.classes_ = np.unique(y)
        if len(self.classes_) != 2:
            raise DataError(f"need two classes to fit, got {self.classes_.tolist()}")
        t = (y == self.classes_[1]).astype(np.float64)
        s = np.ones(len(t)) if sample_weight is None else np.asarray(sample_weight, np.float64)
        # divide the objective by the summed weight, as scikit-learn does, so tol means the same at any n
        scale, lam = self.C / s.sum(), 1.0 / s.sum()
        # per cell: weight of label-1 pairs and of all pairs (0 where an LLM has no result)
        W1, Wt = d.cell_sums(s * t) * scale, d.cell_sums(s) * scale
        width, l1 = d.width, self.penalty == "l1"

        def objective(theta_np):
            theta = torch.from_numpy(theta_np)
            w = theta[:width] - theta[width:-1] if l1 else theta[:-1]
            Z = d.grid_logits(w, theta[-1])
            # summed log-loss: softplus(z) for every pair, minus z for each label-1 pair
            loss = (Wt * softplus(Z) - W1 * Z).sum()
            G = Wt * torch.sigmoid(Z) - W1
            grad_w = d.grid_rmatvec(G)
            if l1:
                reg = lam * theta[:-1].sum()
                grad = torch.cat([grad_w + lam, -grad_w + lam, G.sum().reshape(1)])
            else:
                reg = 0.5 * lam * (w @ w)
                grad = torch.cat([grad_w + lam * w, G.sum().reshape(1)])
            return float(loss + reg), grad.numpy()

        n_theta = 2 * width + 1 if l1 else width + 1
        bounds = [(0.0, None)] * (2 * width) + [(None, None)] if l1 else None
        # ftol=0: only the projected gradient (tol), max_iter or an exhausted line search stop it. A
        # relative-decrease rule stops early on flat valleys: at ftol=64 eps an L1 fit with C=2 stopped
        # at a scaled KKT residual of 4e-8 (tol 1e-9), a coefficient 2.5e-4 from saga's converged optimum
        with torch_threads(self.num_threads):
            res = minimize(objective, np.zeros(n_theta), jac=True, method="L-BFGS-B", bounds=bounds,
                           options={"maxiter": self.max_iter, "gtol": self.tol, "ftol": 0.0})
        if res.status == 1:
            warnings.warn(f"PairLogisticRegression(C={self.C}, penalty={self.penalty!r}) did not converge in "
                          f"{self.max_iter} iterations; raise max_iter or tol", ConvergenceWarning, stacklevel=2)
        w = res.x[:width] - res.x[width:-1] if l1 else res.x[:-1]
        self.coef_ = w[None, :]
        self.intercept_ = res.x[-1:].copy()
        self.n_iter_ = np.array([res.nit])
        self.n_features_in_ = width
        return self

    def decision_function(self, X) -> np.ndarray:
        """Logits of shape (n,) for rows ``X`` (n, d), array or row source."""
        check_is_fitted(self, "coef_", msg="PairLogisticRegression is not fitted")
        d = _design(X)
        if d.width != self.n_features_in_:
            raise DataError(f"X has {d.width} features; the model was fitted on {self.n_features_in_}")
        Z = d.grid_logits(torch.from_numpy(self.coef_[0]), float(self.intercept_[0])).numpy()
        return Z[d.llm_idx, d.inst_idx]

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities of shape (n, 2), columns in ``classes_`` order."""
        p = sigmoid(self.decision_function(X))
        return np.column_stack([1.0 - p, p])

    def predict(self, X) -> np.ndarray:
        """Predicted class labels of shape (n,)."""
        return self.classes_[(self.decision_function(X) > 0).astype(int)]
