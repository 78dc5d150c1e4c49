"""On-disk embedding cache keyed by featurizer identity and text hash.

One ``.npz`` shard per transform call with new texts; every write goes to a temporary file
that is renamed into place, so a killed run never leaves a corrupt shard.
"""
from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import zipfile
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

log = logging.getLogger(__name__)


def text_key(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def texts_hash(texts: Sequence[str]) -> str:
    h = hashlib.sha256()
    for t in texts:
        h.update(text_key(t).encode())
    return h.hexdigest()[:16]


class EmbeddingCache:
    """Cache of text -> vector for one featurizer identity.

    Parameters
    ----------
    root : str
        Cache root directory.
    identity : str
        Featurizer identity; hashed into the sub-directory name.
    """

    def __init__(self, root: str | os.PathLike, identity: str):
        self.dir = Path(root) / hashlib.sha256(identity.encode()).hexdigest()[:20]
        self.identity = identity

    def _load(self) -> dict[str, np.ndarray]:
        store: dict[str, np.ndarray] = {}
        if not self.dir.exists():
            return store
        for shard in sorted(self.dir.glob("*.npz")):
            try:
                with np.load(shard, allow_pickle=False) as z:
                    for k, v in zip(z["keys"], z["vectors"]):
                        store[str(k)] = v
            except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as e:  # unreadable shard: recompute
                # (a truncated .npz raises BadZipFile, which is neither OSError nor ValueError)
                log.warning("ignoring unreadable cache shard %s (%s)", shard, e)
        return store

    def get_or_compute(self, texts: list[str], compute: Callable[[list[str]], np.ndarray]) -> np.ndarray:
        """Vectors for ``texts`` of shape (n, dim), computing and storing only the missing ones."""
        keys = [text_key(t) for t in texts]
        if not keys:  # let the featurizer give its (0, dim) shape rather than guessing the dim
            return np.asarray(compute([]), dtype=np.float32)
        store = self._load()
        missing = list(dict.fromkeys(k for k in keys if k not in store))
        if missing:
            by_key = dict(zip(keys, texts))
            new = np.asarray(compute([by_key[k] for k in missing]), dtype=np.float32)
            self._write(missing, new)
            store.update(zip(missing, new))
            log.info("embedded %d new texts (%d cached)", len(missing), len(set(keys)) - len(missing))
        else:
            log.info("all %d texts found in embedding cache %s", len(set(keys)), self.dir)
        return np.stack([store[k] for k in keys]).astype(np.float32, copy=False)

    def _write(self, keys: list[str], vectors: np.ndarray) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        if vectors.ndim != 2 or len(vectors) != len(keys):
            raise ValueError(f"featurizer returned shape {vectors.shape} for {len(keys)} texts; expected ({len(keys)}, dim)")
        self._atomic_write(self.dir / "identity.txt", lambda f: f.write(self.identity.encode()))
        self._atomic_write(self.dir / f"{texts_hash(keys)}.npz",
                           lambda f: np.savez(f, keys=np.asarray(keys), vectors=vectors))

    def _atomic_write(self, dest: Path, write: Callable) -> None:
        # Write a temp file beside dest, then rename: readers see the old file or the whole new one.
        # The ".tmp" suffix keeps half-written files out of the "*.npz" glob; remove them on failure.
        fd, tmp = tempfile.mkstemp(suffix=dest.suffix + ".tmp", dir=self.dir)
        try:
            with os.fdopen(fd, "wb") as f:
                write(f)
            os.replace(tmp, dest)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
