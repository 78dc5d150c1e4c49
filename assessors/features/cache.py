"""On-disk embedding cache keyed by featurizer identity and text hash.

Missing texts are computed in shards of ``shard_size`` texts, each written as soon as it is
done (atomically, :func:`assessors.io.atomic_write`), so a killed run loses at most the shard in
progress and a rerun computes only what is still missing. When a run leaves many shards, they are
merged into one so that later lookups open few files.
"""
from __future__ import annotations

import hashlib
import logging
import os
import time
import zipfile
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from assessors.io import atomic_open, atomic_write

log = logging.getLogger(__name__)

#: Texts per shard: the most a kill can lose (MiniLM on 2 cores: ~10-20 s of work).
SHARD_SIZE = 512
#: Shards in one directory above which they are merged into one after a computation.
MAX_SHARDS = 16
#: Temporary files older than this (seconds) are leftovers of a killed write.
_STALE_TMP_S = 3600


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
        Featurizer identity; hashed into the sub-directory name and written to ``identity.txt``
        (credentials in URLs are redacted first, see :mod:`assessors.secrets`).
    shard_size : int, optional
        Texts computed and written per shard (default :data:`SHARD_SIZE`).
    """

    def __init__(self, root: str | os.PathLike, identity: str, shard_size: int | None = None):
        from assessors.secrets import redact_text

        self.identity = redact_text(identity)
        self.dir = Path(root) / hashlib.sha256(self.identity.encode()).hexdigest()[:20]
        self.shard_size = max(1, int(shard_size or SHARD_SIZE))

    def _shards(self) -> list[Path]:
        return sorted(self.dir.glob("*.npz")) if self.dir.exists() else []

    def _load(self) -> dict[str, np.ndarray]:
        store: dict[str, np.ndarray] = {}
        for attempt in range(3):
            vanished = False
            for shard in self._shards():
                try:
                    with np.load(shard, allow_pickle=False) as z:
                        store.update(zip(z["keys"].tolist(), z["vectors"]))
                except FileNotFoundError:  # merged away by another process meanwhile: look again
                    vanished = True
                except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as e:  # unreadable: recompute
                    # (a truncated .npz raises BadZipFile, which is neither OSError nor ValueError)
                    log.warning("ignoring unreadable cache shard %s (%s)", shard, e)
            if not vanished:
                break
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
            self._compute_shards(missing, by_key, compute, store)
            log.info("embedded %d new texts (%d cached)", len(missing), len(set(keys)) - len(missing))
        else:
            log.info("all %d texts found in embedding cache %s", len(set(keys)), self.dir)
        return np.stack([store[k] for k in keys]).astype(np.float32, copy=False)

    def _compute_shards(self, missing: list[str], by_key: dict, compute: Callable, store: dict) -> None:
        from tqdm.auto import tqdm

        starts = range(0, len(missing), self.shard_size)
        bar = tqdm(total=len(missing), desc="embedding (cache shards)", unit="text", disable=len(starts) <= 1)
        for s in starts:
            chunk = missing[s:s + self.shard_size]
            new = np.asarray(compute([by_key[k] for k in chunk]), dtype=np.float32)
            self._write(chunk, new)
            store.update(zip(chunk, new))
            bar.update(len(chunk))
        bar.close()
        if len(self._shards()) > MAX_SHARDS:
            self._compact()

    def _write(self, keys: list[str], vectors: np.ndarray) -> None:
        if vectors.ndim != 2 or len(vectors) != len(keys):
            raise ValueError(f"featurizer returned shape {vectors.shape} for {len(keys)} texts; expected ({len(keys)}, dim)")
        self.dir.mkdir(parents=True, exist_ok=True)
        ident = self.dir / "identity.txt"
        if not ident.exists():
            atomic_write(ident, lambda tmp: Path(tmp).write_text(self.identity, encoding="utf-8"))
        self._save(self.dir / f"{texts_hash(keys)}.npz", keys, vectors)
        self._remove_stale_tmp()

    @staticmethod
    def _save(path: Path, keys: list[str], vectors: np.ndarray) -> None:
        with atomic_open(path) as f:  # a file object: np.savez would append ".npz" to a path
            np.savez(f, keys=np.asarray(keys), vectors=vectors)

    def _compact(self) -> None:
        """Merge all shards into one (the merged shard is written before the parts are removed)."""
        from filelock import FileLock, Timeout

        try:
            with FileLock(str(self.dir / ".compact.lock"), timeout=0):
                shards = self._shards()
                store = self._load()
                if len(shards) < 2 or not store:
                    return
                keys = sorted(store)
                merged = self.dir / f"{texts_hash(keys)}.npz"
                self._save(merged, keys, np.stack([store[k] for k in keys]))
                for shard in shards:
                    if shard != merged:
                        shard.unlink(missing_ok=True)
                log.info("merged %d cache shards into %s", len(shards), merged.name)
        except Timeout:  # another process is merging: its result serves us too
            pass

    def _remove_stale_tmp(self) -> None:
        # a SIGKILL during a write leaves its temporary file behind (atomic_write cannot remove it)
        now = time.time()
        for tmp in self.dir.glob(".*.tmp"):
            try:
                if now - tmp.stat().st_mtime > _STALE_TMP_S:
                    tmp.unlink()
            except FileNotFoundError:
                pass
