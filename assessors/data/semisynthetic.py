"""Semi-synthetic answers at any size: new LLMs drawn from a fitted IRT prior, on real prompts.

An :class:`ItemBank` holds what a fitted latent-ability model says about real prompts: each
prompt's discrimination ``a`` (D) and difficulty ``b``, and the Gaussian prior over abilities
fitted on the real training LLMs. :func:`generate` draws ``n_llms`` abilities from that prior and
samples each LLM's 0/1 answer on every prompt from ``sigmoid(theta . a - b)``, so the data has the
real prompts' difficulty structure and a realistic spread of LLMs.

Answers are written to disk in blocks of prompts, never held as a dense float matrix:
``answers.npy`` is a prompt-major uint8 array (n_prompts, n_llms) (65 MB at 10,000 LLMs x 6,517
prompts) that readers open memory-mapped, with ``255`` reserved for "not evaluated". The directory
is written under a temporary name and renamed when complete, so a crash leaves no half-written
data set, and the same bank, size and seed give the same bytes.

The bank itself is written by :func:`assessors.core.latent_bank.item_bank` from a fitted
:class:`~assessors.core.latent.LatentAssessor`; this module only reads arrays.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from assessors.data.results import Results
from assessors.errors import DataError
from assessors.irt_math import sigmoid

log = logging.getLogger("assessors.data")

#: Value of a missing answer in ``answers.npy``.
MISSING = 255
#: Prompts per sampling block. Part of the seed's meaning: each block has its own random stream,
#: so changing it would change the data a seed gives.
BLOCK = 256


@dataclass
class ItemBank:
    """Item parameters of real prompts and an ability prior.

    Attributes
    ----------
    instance_ids : ndarray of str, shape (n,)
    a : ndarray of shape (n, D)
        Discriminations.
    b : ndarray of shape (n,)
        Difficulties.
    prior_mean : ndarray of shape (D,)
    prior_cov : ndarray of shape (D, D)
    """

    instance_ids: np.ndarray
    a: np.ndarray
    b: np.ndarray
    prior_mean: np.ndarray
    prior_cov: np.ndarray

    def save(self, path: str | Path) -> Path:
        """Write the bank as a pickle-free ``.npz`` (atomically)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp.npz")
        np.savez(tmp, instance_ids=np.asarray(self.instance_ids, dtype=str), a=self.a, b=self.b,
                 prior_mean=self.prior_mean, prior_cov=self.prior_cov)
        os.replace(tmp, path)
        return path

    @classmethod
    def load(cls, path: str | Path) -> "ItemBank":
        path = Path(path)
        if not path.exists():
            raise DataError(f"{path}: item bank not found. Write one from a latent assessor fitted on real data: "
                            "python benchmarks/scale_latent.py --bank-only (see docs/scaling.md)")
        with np.load(path, allow_pickle=False) as z:
            bank = cls(z["instance_ids"], z["a"].astype(np.float64), z["b"].astype(np.float64),
                       z["prior_mean"].astype(np.float64), z["prior_cov"].astype(np.float64))
        n, D = bank.a.shape
        if bank.b.shape != (n,) or len(bank.instance_ids) != n or bank.prior_mean.shape != (D,) \
                or bank.prior_cov.shape != (D, D):
            raise DataError(f"{path}: inconsistent item bank shapes: a {bank.a.shape}, b {bank.b.shape}, "
                            f"ids {len(bank.instance_ids)}, prior {bank.prior_mean.shape} / {bank.prior_cov.shape}")
        return bank

    def digest(self) -> str:
        """Content hash: names the generated data sets of this bank."""
        h = hashlib.sha256()
        for arr in (np.asarray(self.instance_ids, dtype=str), self.a, self.b, self.prior_mean, self.prior_cov):
            h.update(np.ascontiguousarray(arr).tobytes())
        return h.hexdigest()[:16]


@contextlib.contextmanager
def writing_answers(out_dir: str | Path, n_prompts: int, n_llms: int):
    """An answers directory to fill a block at a time, put in place only when complete.

    Yields ``(tmp_dir, answers)``: ``answers`` is ``tmp_dir / "answers.npy"``, a writable
    memory-mapped uint8 array of shape (n_prompts, n_llms), prompt-major, every cell ``MISSING``
    to start with. Write 0/1 into it in any order (a block of prompts or of LLMs at a time) and
    put other files in ``tmp_dir``; when the block exits without error, the directory is renamed
    to ``out_dir`` (replacing it). After an error nothing is left at ``out_dir``.
    """
    out = Path(out_dir)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        answers = np.lib.format.open_memmap(tmp / "answers.npy", mode="w+", dtype=np.uint8,
                                            shape=(int(n_prompts), int(n_llms)))
        answers[:] = MISSING
        yield tmp, answers
        answers.flush()
        del answers
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if out.exists():
        shutil.rmtree(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    os.replace(tmp, out)


def generate(bank: ItemBank, n_llms: int, out_dir: str | Path, seed: int = 0, progress: bool = False) -> Path:
    """Sample ``n_llms`` LLMs' answers on the bank's prompts into ``out_dir``.

    Writes ``answers.npy`` (uint8, shape (n_prompts, n_llms), prompt-major), ``theta.npy``
    (n_llms, D) and ``meta.json``. An existing complete directory with the same bank digest, size
    and seed is reused as is.

    Returns
    -------
    Path
        ``out_dir``.
    """
    out = Path(out_dir)
    n_llms = int(n_llms)
    if n_llms < 1:
        raise DataError(f"n_llms must be at least 1, got {n_llms}")
    meta = {"bank": bank.digest(), "n_llms": n_llms, "seed": int(seed), "block": BLOCK,
            "n_prompts": int(len(bank.b)), "dims": int(bank.a.shape[1]), "missing": MISSING}
    if (out / "meta.json").exists():
        old = json.loads((out / "meta.json").read_text())
        if old == meta:
            return out
        raise DataError(f"{out} holds another semi-synthetic data set ({old}); choose another directory")
    theta = np.random.default_rng([int(seed), 0]).multivariate_normal(bank.prior_mean, bank.prior_cov, size=n_llms)
    n = len(bank.b)
    with writing_answers(out, n, n_llms) as (tmp, answers):
        starts = range(0, n, BLOCK)
        if progress:
            from tqdm.auto import tqdm

            starts = tqdm(starts, desc=f"sampling {n_llms} LLMs", unit="block")
        for s in starts:
            e = min(s + BLOCK, n)
            rng = np.random.default_rng([int(seed), 1, s // BLOCK])  # one stream per block: reproducible in pieces
            p = sigmoid(bank.a[s:e] @ theta.T - bank.b[s:e, None])  # (block, n_llms), one block at a time
            answers[s:e] = rng.random(p.shape) < p
        np.save(tmp / "theta.npy", theta)
        (tmp / "meta.json").write_text(json.dumps(meta))
    log.info("semi-synthetic: %d LLMs x %d prompts written to %s", n_llms, n, out)
    return out


def open_answers(path: str | Path) -> np.ndarray:
    """The prompt-major uint8 answers of a generated directory (or an ``answers.npy``), memory-mapped."""
    path = Path(path)
    if path.is_dir():
        path = path / "answers.npy"
    if not path.exists():
        raise DataError(f"{path}: no answers file; generate one with assessors.data.semisynthetic.generate")
    arr = np.load(path, mmap_mode="r")
    if arr.dtype != np.uint8 or arr.ndim != 2:
        raise DataError(f"{path}: answers must be a 2-D uint8 array (prompts x LLMs), got {arr.dtype} {arr.shape}")
    return arr


def load_semisynthetic(bank: str | Path, n_llms: int, items: Results, seed: int = 0,
                       cache_dir: str | Path | None = None) -> Results:
    """``n_llms`` semi-synthetic LLMs on ``items``' prompts, as :class:`Results` (for ``train.py``).

    Parameters
    ----------
    bank : path
        Item bank (``.npz``) fitted on real data; its instance ids must be ``items``' instances.
    n_llms : int
    items : Results
        The real data whose prompts, targets and subgroups describe the columns.
    seed : int
    cache_dir : path, optional
        Where generated data sets are kept (``<cache_dir>/semisynthetic/<digest>-<n>-<seed>``).

    Returns
    -------
    Results
        ``success`` of shape (n_llms, n_prompts), LLMs named ``synth_00000``, ...
    """
    bank = ItemBank.load(bank)
    ids = items.instances.index.astype(str)
    missing = np.setdiff1d(bank.instance_ids, ids)
    if len(missing):
        raise DataError(f"item bank has {len(missing)} instance ids that {items.name} lacks (e.g. {missing[:3].tolist()}): "
                        "it was fitted on other data; rebuild it on these items")
    root = Path(cache_dir or Path.home() / ".cache" / "assessors") / "semisynthetic"
    out = generate(bank, n_llms, root / f"{bank.digest()}-{int(n_llms)}-{int(seed)}", seed=seed, progress=True)
    answers = open_answers(out)
    success = np.ascontiguousarray(answers.T, dtype=np.float32)
    instances = items.instances.loc[bank.instance_ids].copy()
    llms = [f"synth_{i:05d}" for i in range(int(n_llms))]
    return Results(instances=instances, llms=llms, success=success, name=f"semisynthetic:{items.name}",
                   meta={"bank": bank.digest(), "seed": int(seed), "path": str(out),
                         "prompt_files": dict(items.meta.get("prompt_files") or {})})

