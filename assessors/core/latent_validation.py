"""Early-stopping scores of the latent-ability assessor, computed once per epoch on the training module.

The in-memory fit (:class:`~assessors.core.latent.LatentAssessor`) and the streaming fit
(:class:`~assessors.core.latent_stream.StreamingLatentAssessor`) both use these, so the two train
the same model:

* :class:`ValidationLLMScores`: validation LLMs x validation prompts, each validation LLM entering
  through its posterior given its reference answers, exactly as a new LLM does at prediction;
* :class:`HeldOutScores`: without validation LLMs, the training LLMs' log loss on held-out prompts,
  read and scored a block of prompts at a time, so no (held-out prompts x LLMs) float matrix is
  built: 100k held-out prompts x 10k LLMs would take 4 GB in float32, while a block is at most
  ``block_cells`` (4M) cells, 32 MB in float64.

Both are plain objects that pickle (DDP spawn sends them to the other processes).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from assessors.core.posterior import (GaussianPrior, check_answers, laplace_posterior, logit_moments,
                                      probit_predictive, sigmoid)
from assessors.data.semisynthetic import MISSING, open_answers
from assessors.metrics import per_llm_auc


def _log_loss_sum(S: np.ndarray, p: np.ndarray) -> tuple[float, int]:
    """Summed log loss of ``p`` (clipped to [1e-6, 1 - 1e-6]) over the graded cells of ``S`` (NaN =
    not evaluated), both of the same shape, and the number of those cells."""
    obs = np.isfinite(S)
    y, q = S[obs], np.clip(p[obs], 1e-6, 1 - 1e-6)
    return float(-np.sum(y * np.log(q) + (1 - y) * np.log1p(-q))), int(len(y))


def early_stopping_scores(S: np.ndarray, p: np.ndarray) -> dict[str, float]:
    """Mean log loss and minus the mean per-LLM AUC of ``p`` against ``S``, both of shape (k, n).

    NaN cells of ``S`` (not evaluated) do not count. ``val_neg_auc`` is 0 when no LLM has both
    outcomes.
    """
    total, count = _log_loss_sum(S, p)
    aucs = per_llm_auc(S, p)
    return {"val_loss": total / max(count, 1),
            "val_neg_auc": -float(np.nanmean(aucs)) if np.isfinite(aucs).any() else 0.0}


def _item_parameters(module, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The module's item parameters ``a`` (m, D) and ``b`` (m,) of prompts ``X`` (m, d), in float64."""
    import torch

    with torch.no_grad():
        a, b = module.items(torch.from_numpy(np.ascontiguousarray(X, dtype=np.float32)))
    return a.double().numpy(), b.double().numpy()


class ValidationLLMScores:
    """Validation LLMs' scores from their reference posterior, under the prior of the current abilities.

    Parameters
    ----------
    X_val : ndarray of shape (m, d)
        Validation prompts.
    S_val : ndarray of shape (k, m)
        Validation LLMs' success on them (0/1, NaN = not evaluated).
    X_ref : ndarray of shape (n_ref, d)
        Reference prompts.
    R_val : ndarray of shape (k, n_ref)
        Validation LLMs' reference answers.
    auc : bool
        Also minus the mean per-LLM AUC (``val_neg_auc``); off, only ``val_loss``, which early
        stopping on the loss reads (the AUCs took most of each epoch's validation time).
    """

    def __init__(self, X_val: np.ndarray, S_val: np.ndarray, X_ref: np.ndarray, R_val: np.ndarray,
                 auc: bool = True):
        self.X_val, self.X_ref = np.asarray(X_val, dtype=np.float32), np.asarray(X_ref, dtype=np.float32)
        self.S_val = check_answers(S_val, "validation success")
        self.R_val = check_answers(R_val, "validation reference answers")
        self.auc = bool(auc)

    def __call__(self, module) -> dict[str, float]:
        a_r, b_r = _item_parameters(module, self.X_ref)
        a_v, b_v = _item_parameters(module, self.X_val)
        prior = GaussianPrior.fit(module.theta.detach().double().numpy())
        th, cov = laplace_posterior(a_r, b_r, self.R_val, prior.mean, prior.precision)
        p, _ = probit_predictive(*logit_moments(th, cov, a_v, b_v))
        if self.auc:
            return early_stopping_scores(self.S_val, p)
        total, count = _log_loss_sum(self.S_val, p)
        return {"val_loss": total / max(count, 1)}


def graded(block: np.ndarray) -> np.ndarray:
    """Answers of a block of prompts as float 0/1 with NaN = not evaluated (uint8 ``MISSING`` or NaN)."""
    if block.dtype == np.uint8:
        return np.where(block == MISSING, np.nan, block.astype(np.float64))
    return np.asarray(block, dtype=np.float64)


class HeldOutScores:
    """The training LLMs' log loss on held-out prompts, a block of prompts at a time.

    Parameters
    ----------
    answers : str, Path or ndarray of shape (n_prompts, n_llms)
        Prompt-major answers: the path of uint8 answers (``MISSING`` = not evaluated), opened
        memory-mapped at each call so the object pickles small, or an array (uint8 the same way,
        or float with NaN = not evaluated).
    X : ndarray of shape (n_prompts, d)
    prompts : ndarray of int
        The held-out rows.
    auc : bool
        Also minus the mean per-LLM AUC (``val_neg_auc``). It needs every held-out probability at
        once, so it is for data that is in memory anyway.
    block_cells : int
        (prompt, LLM) cells scored at once: ``block_cells // n_llms`` prompts per block.
    """

    def __init__(self, answers, X: np.ndarray, prompts: np.ndarray, auc: bool = False, block_cells: int = 1 << 22):
        self.answers = str(answers) if isinstance(answers, (str, Path)) else answers
        self.X, self.prompts = X, np.sort(np.asarray(prompts, dtype=np.int64))
        self.auc, self.block_cells = bool(auc), int(block_cells)

    def blocks(self, module):
        """Yields ``(S (b, n_llms), p (b, n_llms))`` for consecutive blocks of held-out prompts."""
        answers = open_answers(self.answers) if isinstance(self.answers, str) else self.answers
        theta = module.theta.detach().double().numpy()  # (n_llms, D)
        step = max(1, self.block_cells // max(answers.shape[1], 1))
        for s in range(0, len(self.prompts), step):
            rows = self.prompts[s:s + step]
            a, b = _item_parameters(module, self.X[rows])
            yield graded(np.asarray(answers[rows])), sigmoid(a @ theta.T - b[:, None])

    def __call__(self, module) -> dict[str, float]:
        if self.auc:
            S, p = (np.concatenate(parts).T for parts in zip(*self.blocks(module)))
            return early_stopping_scores(S, p)
        total, count = 0.0, 0
        for S, p in self.blocks(module):
            t, c = _log_loss_sum(S, p)
            total, count = total + t, count + c
        return {"val_loss": total / max(count, 1)}
