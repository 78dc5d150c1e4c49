"""Training one member of the latent-ability assessor in PyTorch.

The network maps a prompt's features to item parameters ``[a (D), b]``; each training LLM has a
learned ability ``theta`` (D); ``logit = theta . a - b``. Training streams (LLM, prompt, label)
triples from index arrays grouped by prompt: a batch is a set of prompts with all their graded
pairs, so the item network runs once per prompt in the batch and no (pair x feature) matrix is
ever built. Inference needs no torch: :func:`item_parameters` runs the stored weights in numpy.

:func:`train_member` is a plain loop (AdamW, early stopping with the best epoch's weights restored):
the steps are tiny, and a Lightning Trainer cost more per step than the step itself, besides a
multi-second import. The streaming fit (:mod:`assessors.core.latent_stream`), which may run on
several processes, trains the same module under Lightning.
"""
from __future__ import annotations

import logging
import math

import numpy as np
import torch
from torch import nn

from assessors.classifiers.layers import mlp_layers
from assessors.threads import torch_threads

log = logging.getLogger(__name__)


class LatentIRTModule(nn.Module):
    """Item network + training abilities, with a Gaussian prior ``N(0, prior_var I)`` on abilities.

    Parameters
    ----------
    n_features, n_llms, dims : int
        Prompt feature width, number of training LLMs, ability dimension D.
    hidden_sizes : tuple of int
        Hidden layers of the item network.
    dropout, lr, weight_decay : float
        Dropout in the item network; AdamW learning rate and weight decay (item network only).
    prior_var : float
        Prior variance of abilities during training (a MAP penalty on ``theta``).
    n_pairs : int
        Training pairs per epoch: scales the prior so that the summed objective is the MAP one.
    validate : callable, optional
        ``validate(module) -> {"val_loss": float, "val_auc": float}``, called once per epoch.
    """

    def __init__(self, n_features: int, n_llms: int, dims: int, hidden_sizes=(128,), dropout: float = 0.1,
                 lr: float = 3e-3, weight_decay: float = 1e-3, prior_var: float = 1.0, n_pairs: int = 1,
                 validate=None):
        super().__init__()
        self.lr, self.weight_decay, self.prior_var, self.n_pairs = lr, weight_decay, prior_var, max(int(n_pairs), 1)
        self.dims = int(dims)
        self.register_buffer("mean", torch.zeros(n_features))
        self.register_buffer("std", torch.ones(n_features))
        self.net = mlp_layers(n_features, tuple(hidden_sizes), dropout, n_out=self.dims + 1)
        self.theta = nn.Parameter(0.1 * torch.randn(n_llms, self.dims))
        self.validate_fn = validate

    def items(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Discriminations (B, D) and difficulties (B,) of prompts with features ``x`` (B, n_features)."""
        out = self.net((x - self.mean) / self.std)
        return out[:, :self.dims], out[:, self.dims]

    def loss(self, batch) -> torch.Tensor:
        """The training objective of one batch ``(x, llm index, prompt position, label)``: mean log loss
        plus the prior's share."""
        x, li, ii, y = batch
        a, b = self.items(x)
        logit = (self.theta[li] * a[ii]).sum(-1) - b[ii]
        nll = nn.functional.binary_cross_entropy_with_logits(logit, y)
        # the prior's share per pair, so the epoch's summed objective is the log posterior
        prior = 0.5 * self.theta.pow(2).sum() / (self.prior_var * self.n_pairs)
        return nll + prior

    def optimizer(self) -> torch.optim.Optimizer:
        groups = [{"params": self.net.parameters(), "weight_decay": self.weight_decay},
                  {"params": [self.theta], "weight_decay": 0.0}]  # abilities: the explicit prior above
        return torch.optim.AdamW(groups, lr=self.lr)


class _PromptBatches(torch.utils.data.IterableDataset):
    """Batches of whole prompts with all their graded pairs, reshuffled each epoch.

    Pairs are kept as index arrays sorted by prompt (CSR offsets), so a batch is a slice gather:
    ``(features of the batch's prompts, llm index, position of the prompt in the batch, label)``.
    """

    def __init__(self, X, llm_idx, inst_idx, y, prompts: np.ndarray, batch_prompts: int, seed: int):
        order = np.argsort(inst_idx, kind="stable")
        self.X, self.li, self.y = X, llm_idx[order], y[order]
        self.offsets = np.concatenate([[0], np.cumsum(np.bincount(inst_idx, minlength=len(X)))])
        self.prompts = prompts[self.offsets[prompts + 1] > self.offsets[prompts]]  # those with pairs
        self.batch_prompts, self.rng = int(batch_prompts), np.random.default_rng(seed)

    def __len__(self):
        return math.ceil(len(self.prompts) / self.batch_prompts)

    def __iter__(self):
        perm = self.rng.permutation(self.prompts)
        for s in range(0, len(perm), self.batch_prompts):
            items = np.sort(perm[s:s + self.batch_prompts])
            lo, hi = self.offsets[items], self.offsets[items + 1]
            pos = np.concatenate([np.arange(a, c) for a, c in zip(lo, hi)])
            local = np.repeat(np.arange(len(items)), hi - lo)
            yield (torch.from_numpy(self.X[items]), torch.from_numpy(self.li[pos]), torch.from_numpy(local),
                   torch.from_numpy(self.y[pos]))


def train_member(X, llm_idx, inst_idx, y, n_llms: int, *, train_prompts, dims, hidden_sizes, dropout, lr,
                 weight_decay, prior_var, batch_prompts, max_epochs, patience, seed, num_threads, validate,
                 monitor: str = "val_loss", progress: bool = False) -> dict:
    """Fit one member; returns its weights (numpy), training abilities and the epochs run.

    ``validate(module)`` returns the per-epoch validation metrics; ``monitor`` (lower is better) is
    the one early stopping watches: training stops after ``patience`` epochs without improvement (or
    at a non-finite score), and the best epoch's weights are restored. ``progress`` logs each epoch.
    """
    X = np.ascontiguousarray(X, dtype=np.float32)
    with torch_threads(num_threads), torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        module = LatentIRTModule(X.shape[1], n_llms, dims, hidden_sizes, dropout, lr, weight_decay, prior_var,
                                 n_pairs=len(y), validate=validate)
        sub = X[train_prompts]
        module.mean.copy_(torch.from_numpy(sub.mean(0)))
        module.std.copy_(torch.from_numpy(np.maximum(sub.std(0), 1e-6)))
        data = _PromptBatches(X, np.asarray(llm_idx, np.int64), np.asarray(inst_idx, np.int64),
                              np.asarray(y, np.float32), np.asarray(train_prompts, np.int64), batch_prompts, seed + 1)
        epochs, best_epoch, best = _fit_loop(module, data, validate, monitor, int(max_epochs), int(patience), progress)
    module = module.cpu().eval()
    return {"weights": weights_of(module), "theta": module.theta.detach().numpy().astype(np.float64).copy(),
            "epochs": epochs, "best_epoch": best_epoch, "best": best}


def _fit_loop(module: LatentIRTModule, data, validate, monitor: str, max_epochs: int, patience: int,
              progress: bool) -> tuple[int, int, float]:
    """AdamW over ``data`` for up to ``max_epochs`` epochs, scored by ``validate`` after each; restores
    the best epoch's weights. Returns (epochs run, best epoch, its score).

    It takes the steps a Lightning Trainer took here before (one shuffled pass per epoch, then
    validation in eval mode without gradients; a score rounded to float32, as Lightning logged it), and
    draws from torch's generator in the same order (each pass over a DataLoader draws a base seed), so
    a member trained with it has the same weights.
    """
    opt = module.optimizer()
    loader = torch.utils.data.DataLoader(data, batch_size=None)
    best, best_epoch, state, wait, epoch = math.inf, -1, None, 0, 0
    for epoch in range(max_epochs):
        module.train()
        for batch in loader:
            loss = module.loss(batch)
            opt.zero_grad()
            loss.backward()
            opt.step()
        module.eval()
        with torch.no_grad():
            for _ in torch.utils.data.DataLoader([0], batch_size=None):  # Lightning's one validation batch
                score = float(np.float32(validate(module)[monitor]))
        if progress:
            log.info("epoch %d: %s %.4f", epoch, monitor, score)
        if score < best:
            best, best_epoch, wait = score, epoch, 0
            state = {k: v.detach().clone() for k, v in module.state_dict().items()}
        else:
            wait += 1
        if not math.isfinite(score) or wait >= patience:
            break
    if state is not None:
        module.load_state_dict(state)
    return epoch + 1, best_epoch, best


def weights_of(module: LatentIRTModule) -> dict:
    """The item network as numpy arrays: standardisation and the Linear layers in order."""
    linears = [m for m in module.net if isinstance(m, nn.Linear)]
    return {"mean": module.mean.numpy().copy(), "std": module.std.numpy().copy(), "dims": module.dims,
            "layers": [(m.weight.detach().numpy().copy(), m.bias.detach().numpy().copy()) for m in linears]}


def item_parameters(weights: dict, X: np.ndarray, block: int = 65536) -> tuple[np.ndarray, np.ndarray]:
    """Numpy forward pass of a member's item network.

    Parameters
    ----------
    weights : dict from :func:`weights_of`
    X : ndarray of shape (m, n_features)

    Returns
    -------
    a : ndarray of shape (m, D)
    b : ndarray of shape (m,)
    """
    X = np.asarray(X, dtype=np.float32)
    out = np.empty((len(X), weights["dims"] + 1), dtype=np.float32)
    for s in range(0, len(X), block):
        h = (X[s:s + block] - weights["mean"]) / weights["std"]
        for i, (W, c) in enumerate(weights["layers"]):
            h = h @ W.T + c
            if i < len(weights["layers"]) - 1:
                h = np.maximum(h, 0.0)
        out[s:s + block] = h
    d = weights["dims"]
    return out[:, :d].astype(np.float64), out[:, d].astype(np.float64)
