"""Training the latent-ability assessor from answers on disk, in one process or with DDP.

The answers are a prompt-major uint8 array (n_prompts, n_llms) read memory-mapped (``255`` = not
evaluated; :mod:`assessors.data.semisynthetic` writes this format). A batch is a block of whole
prompts with all their LLMs' answers: one contiguous read of ``batch_prompts`` rows, turned into
(LLM, prompt, label) index arrays for that batch only, so no copy of the whole cross-product
exists in memory at any time. With Lightning's DDP strategies each process reads its own share of
the batches of an epoch (the same shuffled order on every rank, so the shares are disjoint) and DDP
averages the gradients, including the abilities'.

Early stopping is :class:`~assessors.core.latent.LatentAssessor`'s: the validation LLMs' scores
from their reference posterior when they are given (then the predictions are recalibrated on them
too), else the training LLMs' log loss on held-out prompts (``validation_fraction``), read and
scored a block of prompts at a time.
"""
from __future__ import annotations

import logging
import math
import tempfile
import warnings
from pathlib import Path

import numpy as np
import torch

from assessors.classifiers.mlp import _KeepBest, _quiet_lightning, pl
from assessors.core.latent import LatentAssessor
from assessors.core.latent_net import LatentIRTModule, weights_of
from assessors.core.posterior import check_answers
from assessors.data.semisynthetic import MISSING, open_answers
from assessors.errors import ConfigError, DataError

log = logging.getLogger(__name__)


def _rank_world() -> tuple[int, int]:
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


class PromptBlocks(torch.utils.data.IterableDataset):
    """Batches of whole prompts, read from memory-mapped prompt-major answers.

    Yields ``(x (B, d), llm index (p,), prompt position in batch (p,), label (p,))``: the batch
    format of :class:`~assessors.core.latent_net.LatentIRTModule`. Picklable (it keeps the path,
    not the map), so DDP spawn can send it to other processes.

    Parameters
    ----------
    path : str
        ``answers.npy`` of shape (n_prompts, n_llms), uint8.
    X : ndarray of shape (n_prompts, d)
    prompts : ndarray of int
        Training prompts (rows of the answers).
    batch_prompts, seed : int
    """

    def __init__(self, path: str, X: np.ndarray, prompts: np.ndarray, batch_prompts: int, seed: int):
        self.path, self.X, self.prompts = str(path), X, np.asarray(prompts, dtype=np.int64)
        self.batch_prompts, self.seed, self.epoch = int(batch_prompts), int(seed), 0

    def _n_batches(self, world: int) -> int:
        # every rank runs the same number of steps (DDP would wait forever for a missing one)
        return max(math.ceil(len(self.prompts) / self.batch_prompts) // world, 1)

    def __len__(self):
        return self._n_batches(_rank_world()[1])

    def __iter__(self):
        rank, world = _rank_world()
        answers = open_answers(self.path)
        # the same permutation on every rank (seed and epoch), each taking every world-th batch
        perm = np.random.default_rng([self.seed, self.epoch]).permutation(self.prompts)
        self.epoch += 1
        for k in range(self._n_batches(world)):
            s = (k * world + rank) * self.batch_prompts
            items = np.sort(perm[s:s + self.batch_prompts])  # sorted rows: a near-sequential read
            if not len(items):
                items = np.sort(perm[:self.batch_prompts])
            block = np.asarray(answers[items])  # (B, n_llms) uint8: the only answers in memory
            local, li = np.nonzero(block != MISSING)
            yield (torch.from_numpy(self.X[items]), torch.from_numpy(li.astype(np.int64)),
                   torch.from_numpy(local.astype(np.int64)), torch.from_numpy(block[local, li].astype(np.float32)))


class _LightningIRT(LatentIRTModule, pl.LightningModule):
    """The latent IRT module under a Lightning Trainer (strategies such as DDP over processes)."""

    def training_step(self, batch, batch_idx):
        return self.loss(batch)

    def validation_step(self, batch, batch_idx):
        for name, value in self.validate_fn(self).items():
            self.log(name, float(value), on_epoch=True, batch_size=1)

    def configure_optimizers(self):
        return self.optimizer()


class _Threads(pl.Callback):
    """Torch threads in every process, spawned DDP ranks included."""

    def __init__(self, n: int | None):
        self.n = n

    def setup(self, trainer, module, stage):
        if self.n:
            torch.set_num_threads(int(self.n))


class _Record(pl.Callback):
    """Stores epochs run and the best epoch in a module buffer, which DDP spawn sends back."""

    def __init__(self, keep: _KeepBest):
        self.keep = keep

    def on_fit_end(self, trainer, module):
        module.run_info.copy_(torch.tensor([trainer.current_epoch, self.keep.epoch, self.keep.best], dtype=torch.float64))


def count_pairs(answers: np.ndarray, prompts: np.ndarray, block: int = 512) -> int:
    """Graded (LLM, prompt) pairs on ``prompts``, counted block by block."""
    prompts = np.sort(prompts)
    return int(sum(np.count_nonzero(np.asarray(answers[prompts[s:s + block]]) != MISSING)
                   for s in range(0, len(prompts), block)))


def train_member_stream(path, X, train_prompts, *, n_llms, n_pairs, dims, hidden_sizes, dropout, lr,
                        weight_decay, prior_var, batch_prompts, max_epochs, patience, seed, num_threads, validate,
                        monitor="val_loss", strategy="auto", devices=1, num_nodes=1, progress=False) -> dict:
    """Fit one member from the answers at ``path``; returns what ``train_member`` returns.

    ``validate(module)`` (picklable, for DDP spawn) returns the per-epoch scores; ``monitor`` (lower
    is better) is the one early stopping watches, and the best epoch's weights are restored.
    """
    with _quiet_lightning(num_threads), torch.random.fork_rng(devices=[]), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*IterableDataset.*__len__.*")
        warnings.filterwarnings("ignore", message=".*sync_dist=True.*")
        torch.manual_seed(seed)
        module = _LightningIRT(X.shape[1], n_llms, dims, hidden_sizes, dropout, lr, weight_decay, prior_var,
                               n_pairs=n_pairs, validate=validate)
        module.register_buffer("run_info", torch.zeros(3, dtype=torch.float64))
        sub = X[train_prompts]
        module.mean.copy_(torch.from_numpy(sub.mean(0)))
        module.std.copy_(torch.from_numpy(np.maximum(sub.std(0), 1e-6)))
        data = PromptBlocks(path, X, train_prompts, batch_prompts, seed + 1)
        keep = _KeepBest(monitor)
        callbacks = [_Threads(num_threads), keep, pl.callbacks.EarlyStopping(monitor, patience=int(patience)),
                     _Record(keep)]
        trainer = pl.Trainer(max_epochs=int(max_epochs), accelerator="cpu", devices=devices, num_nodes=num_nodes,
                             strategy=strategy, logger=False, enable_checkpointing=False,
                             enable_model_summary=False, enable_progress_bar=progress, num_sanity_val_steps=0,
                             use_distributed_sampler=False, callbacks=callbacks)
        trainer.fit(module, torch.utils.data.DataLoader(data, batch_size=None),
                    torch.utils.data.DataLoader([0], batch_size=None))
    module = module.cpu().eval()
    epochs, best_epoch, best = module.run_info.tolist()
    return {"weights": weights_of(module), "theta": module.theta.detach().numpy().astype(np.float64).copy(),
            "epochs": int(epochs), "best_epoch": int(best_epoch), "best": float(best)}


class StreamingLatentAssessor(LatentAssessor):
    """:class:`LatentAssessor` trained from answers on disk (memory-mapped), optionally with DDP.

    Parameters
    ----------
    strategy : str
        Lightning strategy: ``auto`` (one process), ``ddp_spawn`` (``devices`` processes started
        here) or ``ddp`` (processes started by a launcher such as ``torchrun``, across machines
        with ``num_nodes``). On CPU the process group uses gloo.
    devices, num_nodes : int
        Processes per machine and machines.
    **others
        As :class:`LatentAssessor`. ``monitor='auc'`` needs validation LLMs (held-out prompts are
        scored for log loss only, a block at a time).
    """

    def __init__(self, dims: int = 4, hidden_sizes=(128,), dropout: float = 0.1, lr: float = 3e-3,
                 weight_decay: float = 1e-3, prior_var: float = 1.0, n_members: int = 1, batch_prompts: int = 64,
                 max_epochs: int = 60, patience: int = 5, monitor: str = "loss", validation_fraction: float = 0.1,
                 residual: bool = True, residual_dims: int = 32, residual_taus=(0.05, 0.1, 0.2, 0.4),
                 residual_min_gain: float = 1.0, item_neighbours: int = 0, seed: int = 0,
                 num_threads: int | None = 1, progress: bool = False, strategy: str = "auto", devices: int = 1,
                 num_nodes: int = 1):
        super().__init__(dims=dims, hidden_sizes=hidden_sizes, dropout=dropout, lr=lr, weight_decay=weight_decay,
                         prior_var=prior_var, n_members=n_members, batch_prompts=batch_prompts,
                         max_epochs=max_epochs, patience=patience, monitor=monitor,
                         validation_fraction=validation_fraction, residual=residual, residual_dims=residual_dims,
                         residual_taus=residual_taus, residual_min_gain=residual_min_gain,
                         item_neighbours=item_neighbours, seed=seed,
                         num_threads=num_threads, progress=progress)
        self.strategy = strategy
        self.devices = devices
        self.num_nodes = num_nodes

    def fit(self, X: np.ndarray, answers, ref_index: np.ndarray, validation=None) -> "StreamingLatentAssessor":
        """Fit on all LLMs of ``answers`` over prompts ``X``.

        Parameters
        ----------
        X : ndarray of shape (n_prompts, d)
        answers : path or ndarray
            A generated directory or an ``answers.npy``: uint8 (n_prompts, n_llms), 0/1 and
            ``255`` for not evaluated, read memory-mapped a block of prompts at a time. Or, as for
            :class:`LatentAssessor`, success of shape (n_llms, n_prompts) with NaN = missing: it is
            written to a temporary file in that format first (so ``train.py`` can use this class).
        ref_index : ndarray of shape (n_ref,)
            Positions of the reference prompts in ``X``.
        validation : tuple (X_val (m, d), S_val (k, m), R_val (k, n_ref)), optional
            Validation prompts, validation LLMs' success on them and their reference answers, in
            memory: as for :class:`LatentAssessor`, early stopping watches these LLMs' predictions
            from their reference posterior, training uses every prompt, and the predictions are
            recalibrated on them. Without: early stopping on the training LLMs' log loss on
            ``validation_fraction`` held-out prompts, and no recalibration.
        """
        has_val = validation is not None and len(validation[1]) > 0
        if int(self.item_neighbours) > 0:
            raise ConfigError("StreamingLatentAssessor: item_neighbours (neighbour profiles) needs the answers "
                              "in memory; set assessor.item_neighbours=0 or use assessor=latent")
        self.profiles_ = None
        if self.monitor not in ("loss", "auc") or (self.monitor == "auc" and not has_val):
            raise DataError(f"StreamingLatentAssessor: monitor must be 'loss', or 'auc' with validation LLMs; "
                            f"got {self.monitor!r}")
        if isinstance(answers, np.ndarray):
            with tempfile.TemporaryDirectory(prefix="latent-stream-") as tmp:
                S = check_answers(answers, "training success")
                np.save(Path(tmp) / "answers.npy", np.where(np.isfinite(S), S, MISSING).T.astype(np.uint8))
                return self.fit(X, Path(tmp) / "answers.npy", ref_index, validation)
        path = Path(answers)
        path = path / "answers.npy" if path.is_dir() else path
        A = open_answers(path)
        X = np.ascontiguousarray(X, dtype=np.float32)
        if A.shape[0] != len(X):
            raise DataError(f"{path}: answers have {A.shape[0]} prompts (rows) but X has {len(X)} rows")
        self.reference_features_ = X[np.asarray(ref_index, dtype=int)]
        validate, train_prompts = self._early_stopping(X, str(path), validation)
        n_pairs = count_pairs(A, train_prompts)
        log.info("streaming latent assessor: %d LLMs x %d prompts, %d training pairs, early stopping on %s, "
                 "strategy %s x %d", A.shape[1], len(train_prompts), n_pairs,
                 f"{len(validation[1])} validation LLMs" if has_val else "held-out prompts", self.strategy,
                 self.devices)
        self._fit_members(lambda seed: train_member_stream(
            str(path), X, train_prompts, n_llms=A.shape[1], n_pairs=n_pairs, seed=seed, validate=validate,
            monitor=self._monitor_name(), strategy=self.strategy, devices=self.devices, num_nodes=self.num_nodes,
            **self._training_kwargs()))
        self.n_pairs_ = n_pairs
        return self._finish(X, validation, "latent-stream")
