"""RouteLLM-style matrix-factorisation router baseline (Ong et al. 2024), per-LLM success variant.

``logit P(success | LLM m, prompt q) = w2 . (v_m * (W1 e_q)) + b_m``: a learned LLM embedding
``v_m`` gates a learned projection of the prompt embedding ``e_q``. RouteLLM scores pairs of
LLMs with the same bilinear form; here each LLM gets its own success probability so that the
same routing policies apply to every method. A new LLM is folded in by fitting only ``v`` and
``b`` on its reference results, everything else frozen.
"""
from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from assessors.threads import torch_threads


class MFSuccess(BaseEstimator):
    """Matrix-factorisation success predictor.

    Parameters
    ----------
    dim : int
        LLM / projected-prompt embedding size.
    epochs : int
        Full-batch Adam steps.
    lr, weight_decay : float
    seed : int
    """

    def __init__(self, dim: int = 64, epochs: int = 400, lr: float = 1e-2, weight_decay: float = 1e-4, seed: int = 0):
        self.dim = dim
        self.epochs = epochs
        self.lr = lr
        self.weight_decay = weight_decay
        self.seed = seed

    def _pairs(self, S):
        li, ii = np.nonzero(np.isfinite(S))
        return li, ii, S[li, ii]

    def fit(self, X: np.ndarray, S: np.ndarray) -> "MFSuccess":
        """X: (n, d) prompt features; S: (n_llms, n) success (NaN = not evaluated)."""
        import torch

        torch.manual_seed(self.seed)
        X = torch.as_tensor(np.asarray(X, np.float32))
        S = np.asarray(S, np.float32)
        li, ii, y = self._pairs(S)
        k, d = S.shape[0], X.shape[1]
        self.W1_ = torch.nn.Linear(d, self.dim, bias=False)
        self.w2_ = torch.nn.Linear(self.dim, 1, bias=False)
        self.V_ = torch.nn.Parameter(torch.randn(k, self.dim) * 0.1 + 1.0)
        self.b_ = torch.nn.Parameter(torch.zeros(k))
        params = [*self.W1_.parameters(), *self.w2_.parameters(), self.V_, self.b_]
        self._train(params, X, torch.as_tensor(li), torch.as_tensor(ii), torch.as_tensor(y), self.V_, self.b_)
        return self

    def _train(self, params, X, li, ii, y, V, b, epochs=None):
        # small dense ops: one thread avoids oversubscription stalls on shared CPUs
        with torch_threads(1):
            self._steps(params, X, li, ii, y, V, b, epochs)

    def _steps(self, params, X, li, ii, y, V, b, epochs):
        import torch

        opt = torch.optim.Adam(params, lr=self.lr, weight_decay=self.weight_decay)
        loss_fn = torch.nn.BCEWithLogitsLoss()
        for _ in range(int(epochs or self.epochs)):
            opt.zero_grad()
            # project each prompt once, then gather: the pair count is n_llms times the prompt count
            z = self.w2_(V[li] * self.W1_(X)[ii]).squeeze(-1) + b[li]
            loss_fn(z, y).backward()
            opt.step()

    def predict_success(self, X: np.ndarray) -> np.ndarray:
        """P(success) of shape (n_llms, m)."""
        import torch

        check_is_fitted(self, "V_", msg="MFSuccess is not fitted")
        with torch.no_grad():
            H = self.W1_(torch.as_tensor(np.asarray(X, np.float32)))  # (m, dim)
            z = (self.V_[:, None, :] * H[None]).matmul(self.w2_.weight[0]) + self.b_[:, None]
        return torch.sigmoid(z).numpy().astype(np.float32)

    def add_llm(self, X_ref: np.ndarray, y_ref: np.ndarray) -> "MFSuccess":
        """Fold in a new LLM from its reference results (only its ``v`` and ``b`` are fitted)."""
        import torch

        keep = np.isfinite(y_ref)
        X = torch.as_tensor(np.asarray(X_ref, np.float32)[keep])
        y = torch.as_tensor(np.asarray(y_ref, np.float32)[keep])
        for p in [*self.W1_.parameters(), *self.w2_.parameters()]:
            p.requires_grad_(False)
        v = torch.nn.Parameter(self.V_.detach().mean(0, keepdim=True).clone())
        b = torch.nn.Parameter(self.b_.detach().mean().reshape(1).clone())
        idx = torch.zeros(len(y), dtype=torch.long)
        self._train([v, b], X, idx, torch.arange(len(y)), y, v, b)
        with torch.no_grad():
            self.V_ = torch.nn.Parameter(torch.cat([self.V_.detach(), v.detach()]))
            self.b_ = torch.nn.Parameter(torch.cat([self.b_.detach(), b.detach()]))
        return self
