"""An MLP head as a PyTorch Lightning module, behind an sklearn-style ``fit``/``predict_proba``.

The assessors call it exactly like a scikit-learn or XGBoost classifier; only the config
file differs. It accepts a *row source* (see :mod:`assessors.classifiers.rows`) so training
rows can be built batch by batch and never materialised.
"""
from __future__ import annotations

import contextlib
import logging
import math
import warnings

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted
from torch import nn

from assessors.classifiers.layers import mlp_layers
from assessors.classifiers.rows import as_row_source, column_stats, iter_chunks, take
from assessors.errors import DataError
from assessors.irt_math import sigmoid
from assessors.tags import with_capabilities
from assessors.threads import torch_threads

try:  # the unified package, else the standalone one that pyproject pins
    import lightning.pytorch as pl
except ImportError:  # pragma: no cover - depends on which distribution is installed
    import pytorch_lightning as pl


class MLPModule(pl.LightningModule):
    """Standardise -> [Linear -> ReLU -> Dropout] x len(hidden_sizes) -> Linear(1) logit.

    Parameters
    ----------
    n_features : int
    hidden_sizes : tuple of int
    dropout, lr, weight_decay : float
        Dropout after each hidden layer; AdamW learning rate and decoupled weight decay.

    The standardisation mean/std are buffers, so they travel with the ``state_dict``.
    """

    def __init__(self, n_features: int, hidden_sizes=(256,), dropout: float = 0.1, lr: float = 1e-3, weight_decay: float = 1e-4):
        super().__init__()
        self.lr, self.weight_decay = lr, weight_decay
        self.register_buffer("mean", torch.zeros(n_features))
        self.register_buffer("std", torch.ones(n_features))
        self.net = mlp_layers(n_features, hidden_sizes, dropout)
        self.loss = nn.BCEWithLogitsLoss()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits of shape (batch,) for inputs of shape (batch, n_features)."""
        return self.net((x - self.mean) / self.std).squeeze(-1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        # no self.log here: per-step logging costs ~15% of a CPU step and nothing reads it
        return self.loss(self(x), y)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", self.loss(self(x), y), on_epoch=True, batch_size=len(y))

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=self.lr, weight_decay=self.weight_decay)


class _Rows(torch.utils.data.Dataset):
    """Dataset indexed by a whole batch of row ids (used with ``batch_size=None``)."""

    def __init__(self, X, y: np.ndarray):
        self.X, self.y = X, y

    def __len__(self):
        return len(self.y)

    def __getitem__(self, idx: np.ndarray):
        return torch.from_numpy(take(self.X, idx)), torch.from_numpy(self.y[idx])


class _IndexBatches(torch.utils.data.Sampler):
    """Yields sorted int64 index arrays of ``batch_size`` rows; reshuffled each epoch from a seeded RNG.

    One array per batch (instead of per-row ``__getitem__`` + collate) keeps Python overhead per
    batch, not per row; sorting within a batch helps memory locality and changes nothing for SGD.
    """

    def __init__(self, indices: np.ndarray, batch_size: int, shuffle: bool, seed: int):
        self.indices, self.batch_size, self.shuffle = indices, batch_size, shuffle
        self.rng = np.random.default_rng(seed)

    def __len__(self):
        return math.ceil(len(self.indices) / self.batch_size)

    def __iter__(self):
        order = self.rng.permutation(self.indices) if self.shuffle else self.indices
        for chunk in iter_chunks(order, self.batch_size):
            yield np.sort(chunk) if self.shuffle else chunk


class _KeepBest(pl.Callback):
    """Keeps the weights with the lowest validation loss in memory and restores them at the end
    (Lightning's EarlyStopping stops but does not restore; ModelCheckpoint would write to disk)."""

    def __init__(self, monitor: str = "val_loss"):
        self.monitor = monitor
        self.best, self.state, self.epoch = math.inf, None, -1

    def on_validation_epoch_end(self, trainer, module):
        loss = trainer.callback_metrics.get(self.monitor)
        if loss is not None and float(loss) < self.best:
            self.best, self.epoch = float(loss), trainer.current_epoch
            self.state = {k: v.detach().clone() for k, v in module.state_dict().items()}

    def on_fit_end(self, trainer, module):
        if self.state is not None:
            module.load_state_dict(self.state)


@contextlib.contextmanager
def _quiet_lightning(num_threads: int | None):
    """Silence Lightning's info banners and data-loader advice; optionally pin torch threads."""
    loggers = [logging.getLogger(n) for n in ("lightning.pytorch", "pytorch_lightning", "lightning.fabric", "lightning_fabric")]
    levels = [lg.level for lg in loggers]
    try:
        for lg in loggers:
            lg.setLevel(logging.WARNING)
        with torch_threads(num_threads), warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*does not have many workers.*")
            warnings.filterwarnings("ignore", message=".*log_every_n_steps.*")
            warnings.filterwarnings("ignore", message=".*no `val_dataloader`.*")  # validation is optional
            warnings.filterwarnings("ignore", message=".*treespec, LeafSpec.*")  # torch-vs-Lightning deprecation
            yield
    finally:
        for lg, lvl in zip(loggers, levels):
            lg.setLevel(lvl)


def holdout_split(n: int, fraction: float, rng: np.random.Generator, groups: np.ndarray | None = None):
    """Sorted (hold-out, training) row positions; with ``groups`` (n,), whole groups are held out.

    Returns
    -------
    val_idx, train_idx : ndarray of int
        About ``fraction`` of the rows (of the groups, if given) in ``val_idx``; none if 0.
    """
    if fraction <= 0:
        return np.array([], dtype=np.int64), np.arange(n)
    if groups is None:
        perm = rng.permutation(n)
        n_val = int(round(n * fraction))
        return np.sort(perm[:n_val]), np.sort(perm[n_val:])
    uniq = np.unique(groups)
    held = rng.permutation(uniq)[: max(1, int(round(len(uniq) * fraction)))]
    is_val = np.isin(groups, held)
    return np.flatnonzero(is_val), np.flatnonzero(~is_val)


class MLPClassifier(ClassifierMixin, BaseEstimator):
    """Binary MLP classifier with the scikit-learn interface, trained by PyTorch Lightning.

    Parameters
    ----------
    hidden_sizes : tuple of int, default (256,)
        Width of each hidden layer.
    dropout : float, default 0.1
    lr : float, default 1e-3
        AdamW learning rate.
    weight_decay : float, default 1e-4
    batch_size : int, default 512
    max_epochs : int, default 20
    validation_fraction : float or None, default 0.1
        Fraction of rows held out for early stopping on validation log loss; the best
        epoch's weights are restored. None or 0 trains for ``max_epochs``.
    patience : int, default 3
        Epochs without validation improvement before stopping.
    holdout_by_instance : bool, default True
        For the generic assessor's pair rows (a row source with ``inst_idx``), hold out whole
        instances with all their LLMs' pairs instead of random pairs. With random pairs every
        held-out instance is also trained on through other LLMs, so the hold-out loss cannot see
        the network memorising instances; the assessor is scored on unseen instances.
    seed : int, default 0
        Seeds initialisation, dropout, shuffling and the hold-out split (results are
        reproducible for a fixed ``num_threads``); the global RNG state is left untouched.
    num_threads : int or None, default None
        Torch intra-op threads during fit/predict (None: torch's current setting).
    accelerator : str, default "cpu"
        Lightning accelerator ("cpu", "gpu", "auto").
    progress : bool, default False
        Show Lightning's progress bar.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)  ``[0., 1.]``
    n_features_in_ : int
    state_dict_ : dict of str -> ndarray
        Fitted weights and standardisation buffers (what pickling stores).
    n_epochs_ : int   epochs run.
    best_epoch_ : int or None   epoch whose weights were kept (early stopping only).
    """

    def __sklearn_tags__(self):  # the generic assessor hands it lazy (LLM, instance) rows, not a dense copy
        return with_capabilities(super().__sklearn_tags__(), accepts_row_source=True)

    def __init__(self, hidden_sizes=(256,), dropout=0.1, lr=1e-3, weight_decay=1e-4, batch_size=512, max_epochs=20,
                 validation_fraction=0.1, patience=3, holdout_by_instance=True, seed=0, num_threads=None, accelerator="cpu",
                 progress=False):
        self.hidden_sizes = hidden_sizes
        self.dropout = dropout
        self.lr = lr
        self.weight_decay = weight_decay
        self.batch_size = batch_size
        self.max_epochs = max_epochs
        self.validation_fraction = validation_fraction
        self.patience = patience
        self.holdout_by_instance = holdout_by_instance
        self.seed = seed
        self.num_threads = num_threads
        self.accelerator = accelerator
        self.progress = progress

    def _build(self, n_features: int) -> MLPModule:
        return MLPModule(n_features, tuple(int(h) for h in self.hidden_sizes), float(self.dropout), float(self.lr), float(self.weight_decay))

    def fit(self, X, y) -> "MLPClassifier":
        """Fit on ``X`` (array or row source, shape (n, d)) and binary ``y`` of shape (n,)."""
        X = as_row_source(X)
        y = np.asarray(y, dtype=np.float32).ravel()
        if len(y) != X.shape[0]:
            raise DataError(f"X has {X.shape[0]} rows but y has {len(y)}")
        if not np.isin(y, (0.0, 1.0)).all():
            bad = np.flatnonzero(~np.isin(y, (0.0, 1.0)))[0]
            raise DataError(f"y must be 0/1; y[{bad}] = {y[bad]}")
        if len(np.unique(y)) < 2:
            raise DataError(f"y has a single class ({y[0]:g}); a classifier needs both 0 and 1")
        n = len(y)
        rng = np.random.default_rng(self.seed)
        groups = getattr(X, "inst_idx", None) if self.holdout_by_instance else None
        val_idx, train_idx = holdout_split(n, self.validation_fraction or 0.0, rng, groups)
        n_val = len(val_idx)

        with _quiet_lightning(self.num_threads), torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed)
            module = self._build(X.shape[1])
            # standardisation needs no more than ~50k rows; a seeded subsample saves a full pass
            stats_idx = train_idx if len(train_idx) <= 50_000 else rng.choice(train_idx, 50_000, replace=False)
            mean, std = column_stats(X, stats_idx)
            module.mean.copy_(torch.from_numpy(mean))
            module.std.copy_(torch.from_numpy(std))
            data = _Rows(X, y)
            loader = lambda idx, shuffle: torch.utils.data.DataLoader(  # noqa: E731
                data, sampler=_IndexBatches(idx, int(self.batch_size), shuffle, self.seed + 1), batch_size=None)
            callbacks, val_loader = [], None
            if n_val > 0:
                keep = _KeepBest()
                callbacks = [keep, pl.callbacks.EarlyStopping("val_loss", patience=int(self.patience))]
                val_loader = loader(val_idx, False)
            trainer = pl.Trainer(
                max_epochs=int(self.max_epochs), accelerator=self.accelerator, devices=1, logger=False,
                enable_checkpointing=False, enable_model_summary=False, enable_progress_bar=bool(self.progress),
                num_sanity_val_steps=0, use_distributed_sampler=False, callbacks=callbacks, default_root_dir=None,
            )
            trainer.fit(module, loader(train_idx, True), val_loader)

        module = module.cpu().eval()
        self.classes_ = np.array([0.0, 1.0])
        self.n_features_in_ = int(X.shape[1])
        self.state_dict_ = {k: v.detach().cpu().numpy().copy() for k, v in module.state_dict().items()}
        self.n_epochs_ = int(trainer.current_epoch)
        self.best_epoch_ = keep.epoch if n_val > 0 else None
        self._net = module
        return self

    def _network(self) -> MLPModule:
        check_is_fitted(self, "state_dict_", msg="MLPClassifier is not fitted; call fit(X, y) first")
        if getattr(self, "_net", None) is None:  # after unpickling: rebuild from the stored weights
            net = self._build(self.n_features_in_)
            net.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in self.state_dict_.items()})
            self._net = net.eval()
        return self._net

    def decision_function(self, X, batch_size: int = 8192) -> np.ndarray:
        """Logits of shape (n,) for ``X`` (array or row source of shape (n, d))."""
        net = self._network()
        X = as_row_source(X)
        if X.shape[1] != self.n_features_in_:
            raise DataError(f"X has {X.shape[1]} features; the classifier was fitted on {self.n_features_in_}")
        out = np.empty(X.shape[0], dtype=np.float32)
        with _quiet_lightning(self.num_threads), torch.inference_mode():
            for idx in iter_chunks(np.arange(X.shape[0]), batch_size):
                out[idx] = net(torch.from_numpy(take(X, idx))).numpy()
        return out

    def predict_proba(self, X) -> np.ndarray:
        """Probabilities of shape (n, 2): columns P(y=0), P(y=1), as in scikit-learn."""
        p1 = sigmoid(self.decision_function(X).astype(np.float64))
        return np.column_stack([1.0 - p1, p1])

    def predict(self, X) -> np.ndarray:
        """Hard labels of shape (n,): 1.0 where P(y=1) > 0.5."""
        return (self.decision_function(X) > 0).astype(np.float64)

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_net", None)  # weights live in state_dict_; the torch module is rebuilt lazily
        return state
