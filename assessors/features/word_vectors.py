"""Word2Vec and FastText prompt features: the mean of the word vectors of a prompt (gensim)."""
from __future__ import annotations

import hashlib
import logging
import zlib
from pathlib import Path

import numpy as np
from sklearn.utils.validation import check_is_fitted

from assessors.errors import ConfigError, DataError
from assessors.features.base import Featurizer

log = logging.getLogger(__name__)


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens of ``text`` (gensim's simple_preprocess, keeping 1-letter words)."""
    from gensim.utils import simple_preprocess

    return simple_preprocess(text, min_len=1, max_len=40)


def stable_hash(s: str) -> int:
    """Process-independent string hash for gensim's ``hashfxn``.

    gensim's default is Python's ``hash``, salted per process (PYTHONHASHSEED). gensim 4 seeds
    its initial vectors from ``seed`` directly, but still routes per-word seeding helpers through
    ``hashfxn``; a stable one keeps every path reproducible across processes.
    """
    return zlib.crc32(s.encode("utf-8"))


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()[:16]


class _WordVectorFeaturizer(Featurizer):
    """Shared logic: train on the training prompts in ``fit`` or load ``vectors_path``; average in ``transform``."""

    runtime_params = Featurizer.runtime_params + ("workers",)

    learns_from_texts = True

    def __init__(self, vectors_path: str | None = None, vector_size: int = 100, window: int = 5,
                 min_count: int = 2, epochs: int = 10, seed: int = 0, workers: int = 1,
                 cache_dir: str | None = None):
        super().__init__(cache_dir=cache_dir)
        self.vectors_path = vectors_path
        self.vector_size = vector_size
        self.window = window
        self.min_count = min_count
        self.epochs = epochs
        self.seed = seed
        self.workers = workers

    def _train(self, sentences: list[list[str]]):
        raise NotImplementedError

    def _load(self, path: Path):
        from gensim.models import KeyedVectors

        if path.suffix in (".bin", ".txt", ".vec"):  # word2vec C formats
            return KeyedVectors.load_word2vec_format(str(path), binary=path.suffix == ".bin")
        return KeyedVectors.load(str(path))

    def _fit(self, texts: list[str]) -> None:
        if self.vectors_path:
            path = Path(self.vectors_path).expanduser()
            if not path.is_file():
                raise DataError(f"{type(self).__name__}: vectors file not found: {path}")
            try:
                self.wv_ = self._load(path)
            except Exception as e:  # gensim raises a mix of pickle/Unpickling/Value errors
                raise DataError(f"{type(self).__name__}: cannot read vectors file {path}: {e}") from e
            # The cache key must change when the file does, not only when its path does.
            self.fit_hash_ = f"file:{_file_digest(path)}"
        else:
            if self.workers != 1:
                log.warning("%s: workers=%s makes training non-deterministic", type(self).__name__, self.workers)
            sentences = [tokenize(t) for t in texts]
            if not any(sentences):
                raise ConfigError(f"{type(self).__name__}.fit: the training prompts contain no words")
            self.wv_ = self._train(sentences)
        self.dim_ = int(self.wv_.vector_size)

    def _vector(self, word: str) -> np.ndarray | None:
        return self.wv_[word] if word in self.wv_.key_to_index else None

    def _transform(self, texts: list[str]) -> np.ndarray:
        check_is_fitted(self, "wv_", msg=f"{type(self).__name__}: call fit(training_prompts) first")
        out = np.zeros((len(texts), self.dim_), dtype=np.float32)
        for i, text in enumerate(texts):
            vecs = [v for v in (self._vector(w) for w in tokenize(text)) if v is not None]
            if vecs:  # no known word: the zero row
                out[i] = np.mean(vecs, axis=0)
        return out


class Word2VecFeaturizer(_WordVectorFeaturizer):
    """Mean Word2Vec vector of a prompt's words; shape (n_texts, vector_size), float32.

    Trained with gensim on the training prompts in :meth:`fit` (skip-gram off, i.e. CBOW,
    gensim's default), or loaded from ``vectors_path`` (gensim ``KeyedVectors.save`` file, or
    word2vec ``.bin``/``.txt``/``.vec``). Out-of-vocabulary words are skipped; a prompt with
    no known word maps to zeros.

    Parameters
    ----------
    vectors_path : str or None
        Pretrained vectors; when given, ``fit`` loads them instead of training.
    vector_size, window, min_count, epochs : int
        gensim training parameters.
    seed : int
        Random seed; with ``workers=1`` training is deterministic across processes.
    workers : int
        Training threads (>1 is faster but not reproducible).
    cache_dir : str or None
        Embedding cache directory; None disables caching.
    """

    def _train(self, sentences):
        from gensim.models import Word2Vec

        model = Word2Vec(sentences=sentences, vector_size=self.vector_size, window=self.window,
                         min_count=self.min_count, epochs=self.epochs, seed=self.seed,
                         workers=self.workers, hashfxn=stable_hash)
        return model.wv


class FastTextFeaturizer(_WordVectorFeaturizer):
    """Mean FastText vector of a prompt's words; shape (n_texts, vector_size), float32.

    Like :class:`Word2VecFeaturizer`, but words unseen in training still get a vector from
    their character n-grams, so only a prompt without any word maps to zeros.

    Parameters
    ----------
    vectors_path : str or None
        Pretrained vectors: a gensim ``FastTextKeyedVectors.save`` file, or a Facebook
        ``.bin`` model (n-grams included); word2vec ``.txt``/``.vec`` files load without n-grams.
    vector_size, window, min_count, epochs : int
        gensim training parameters.
    bucket : int
        Number of hashed n-gram buckets. gensim's default (2,000,000) costs 800 MB at
        ``vector_size=100`` and lands in every pickled assessor; 100,000 suffices for a few
        thousand prompts.
    seed, workers, cache_dir
        As in :class:`Word2VecFeaturizer`.
    """

    def __init__(self, vectors_path: str | None = None, vector_size: int = 100, window: int = 5,
                 min_count: int = 2, epochs: int = 10, bucket: int = 100_000, seed: int = 0,
                 workers: int = 1, cache_dir: str | None = None):
        super().__init__(vectors_path=vectors_path, vector_size=vector_size, window=window,
                         min_count=min_count, epochs=epochs, seed=seed, workers=workers, cache_dir=cache_dir)
        self.bucket = bucket

    def _load(self, path: Path):
        if path.suffix == ".bin":
            from gensim.models.fasttext import load_facebook_vectors

            return load_facebook_vectors(str(path))
        return super()._load(path)

    def _train(self, sentences):
        from gensim.models import FastText

        model = FastText(sentences=sentences, vector_size=self.vector_size, window=self.window,
                         min_count=self.min_count, epochs=self.epochs, bucket=self.bucket,
                         seed=self.seed, workers=self.workers, hashfxn=stable_hash)
        return model.wv

    def _vector(self, word: str) -> np.ndarray | None:
        # FastTextKeyedVectors composes OOV words from n-grams; plain KeyedVectors cannot.
        if word in self.wv_.key_to_index or getattr(self.wv_, "bucket", 0):
            return self.wv_[word]
        return None
