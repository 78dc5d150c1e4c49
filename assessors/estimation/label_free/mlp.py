"""A small MLP regressor (PyTorch Lightning) behind sklearn's ``fit``/``predict``, for the meta-model.

Meta-model training sets are tiny (one row per seen dataset x LLM x prompt variant), so the whole
set is one batch and training is full-batch AdamW; the output is a sigmoid because targets are
accuracies in [0, 1].
"""
from __future__ import annotations

import logging
import warnings

import numpy as np
import torch
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted
from torch import nn

from assessors.classifiers.mlp import mlp_layers

try:  # the unified package, else the standalone one that pyproject pins
    import lightning.pytorch as pl
except ImportError:  # pragma: no cover
    import pytorch_lightning as pl


class _Module(pl.LightningModule):
    def __init__(self, n_features, hidden_sizes, dropout, lr, weight_decay):
        super().__init__()
        self.lr, self.weight_decay = lr, weight_decay
        self.net = mlp_layers(n_features, hidden_sizes, dropout)

    def forward(self, x):
        return torch.sigmoid(self.net(x).squeeze(-1))

    def training_step(self, batch, batch_idx):
        x, y = batch
        return nn.functional.mse_loss(self(x), y)

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=self.lr, weight_decay=self.weight_decay)


class MLPRegressor(BaseEstimator, RegressorMixin):
    """Standardised inputs -> MLP -> sigmoid, trained with MSE.

    Parameters
    ----------
    hidden_sizes : tuple of int
    dropout, lr, weight_decay : float
    max_steps : int
        Full-batch optimisation steps (run as epochs of 50 steps: Lightning's per-epoch overhead
        would otherwise dominate on tiny meta-model data).
    random_state : int
    """

    def __init__(self, hidden_sizes=(64, 32), dropout: float = 0.0, lr: float = 3e-3, weight_decay: float = 1e-4,
                 max_steps: int = 1000, random_state: int = 0):
        self.hidden_sizes = hidden_sizes
        self.dropout = dropout
        self.lr = lr
        self.weight_decay = weight_decay
        self.max_steps = max_steps
        self.random_state = random_state

    def fit(self, X, y) -> "MLPRegressor":
        """Fit on ``X`` of shape (n, d) and targets ``y`` of shape (n,) in [0, 1]."""
        X = np.asarray(X, dtype=np.float32)
        y = np.asarray(y, dtype=np.float32)
        self.mean_, self.std_ = X.mean(0), X.std(0) + 1e-6
        pl.seed_everything(self.random_state, workers=False, verbose=False)
        self.module_ = _Module(X.shape[1], tuple(self.hidden_sizes), self.dropout, self.lr, self.weight_decay)
        ds = torch.utils.data.TensorDataset(torch.from_numpy((X - self.mean_) / self.std_), torch.from_numpy(y))
        reps = 50
        loader = torch.utils.data.DataLoader(ds, batch_size=len(ds), sampler=list(range(len(ds))) * reps)
        trainer = pl.Trainer(max_steps=self.max_steps, max_epochs=-1, accelerator="cpu", devices=1, logger=False,
                             enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
        logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)
        logging.getLogger("pytorch_lightning").setLevel(logging.ERROR)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "few batches"/"num_workers" hints are irrelevant here
            trainer.fit(self.module_, loader)
        return self

    def predict(self, X) -> np.ndarray:
        """Predictions of shape (n,)."""
        check_is_fitted(self, "module_", msg="MLPRegressor: call fit first")
        X = (np.asarray(X, dtype=np.float32) - self.mean_) / self.std_
        self.module_.eval()
        with torch.no_grad():
            return self.module_(torch.from_numpy(X)).numpy().astype(float)
