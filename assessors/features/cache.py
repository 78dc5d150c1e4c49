"""On-disk embedding cache keyed by featurizer identity and text hash.

Missing texts are computed in shards of ``shard_size`` texts, each written as soon as it is
done (atomically, :func:`assessors.io.atomic_write`), so a killed run loses at most the shard in
progress and a rerun computes only what is still missing. When a run leaves many shards, they are
merged into one so that later lookups open few files.

Processes sharing a cache embed each text once: a shard is computed under a file lock named after
its texts. A process that finds a shard locked computes the next free ones first, then waits for
the lock and reads what the holder wrote (computing it only if the holder died first). Concurrent
runs over the same texts in the same order split their shards this way; runs whose missing texts
are cut into different shards may still embed some texts twice.
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
    progress : bool
        A progress bar over the shards when there are several to compute.
    """

    def __init__(self, root: str | os.PathLike, identity: str, shard_size: int | None = None, progress: bool = True):
        from assessors.secrets import redact_text

        self.identity = redact_text(identity)
        self.dir = Path(root) / hashlib.sha256(self.identity.encode()).hexdigest()[:20]
        self.shard_size = max(1, int(shard_size or SHARD_SIZE))
        self.progress = progress

    def _shards(self) -> list[Path]:
        return sorted(self.dir.glob("*.npz")) if self.dir.exists() else []

    def _load(self, store: dict[str, np.ndarray] | None = None, seen: set[str] | None = None) -> dict[str, np.ndarray]:
        """Every shard's vectors by text key, added to ``store``; with ``seen`` (shard names, updated),
        only the shards not read before (written or merged by another process meanwhile)."""
        store = {} if store is None else store
        seen = set() if seen is None else seen
        for attempt in range(3):
            vanished = False
            for shard in self._shards():
                if shard.name in seen:
                    continue
                try:
                    with np.load(shard, allow_pickle=False) as z:
                        store.update(zip(z["keys"].tolist(), z["vectors"]))
                except FileNotFoundError:  # merged away by another process meanwhile: look again
                    vanished = True
                    continue
                except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as e:  # unreadable: recompute
                    # (a truncated .npz raises BadZipFile, which is neither OSError nor ValueError)
                    log.warning("ignoring unreadable cache shard %s (%s)", shard, e)
                seen.add(shard.name)
            if not vanished:
                break
        return store

    def get_or_compute(self, texts: list[str], compute: Callable[[list[str]], np.ndarray]) -> np.ndarray:
        """Vectors for ``texts`` of shape (n, dim), computing and storing only the missing ones."""
        keys = [text_key(t) for t in texts]
        if not keys:  # let the featurizer give its (0, dim) shape rather than guessing the dim
            return np.asarray(compute([]), dtype=np.float32)
        seen: set[str] = set()  # shards read: later looks read only new ones
        store = self._load({}, seen)
        missing = list(dict.fromkeys(k for k in keys if k not in store))
        if missing:
            by_key = dict(zip(keys, texts))
            n_new = self._compute_shards(missing, by_key, compute, store, seen)
            log.info("embedded %d new texts (%d cached, %d embedded by another process meanwhile)", n_new,
                     len(set(keys)) - len(missing), len(missing) - n_new)
        else:
            log.info("all %d texts found in embedding cache %s", len(set(keys)), self.dir)
        return np.stack([store[k] for k in keys]).astype(np.float32, copy=False)

    def _compute_shards(self, missing: list[str], by_key: dict, compute: Callable, store: dict,
                        seen: set[str]) -> int:
        """Compute the ``missing`` keys shard by shard, each under its lock, into ``store``; how many
        texts this process computed (the rest another process wrote meanwhile)."""
        from filelock import FileLock, Timeout
        from tqdm.auto import tqdm

        self.dir.mkdir(parents=True, exist_ok=True)
        chunks = [missing[s:s + self.shard_size] for s in range(0, len(missing), self.shard_size)]
        bar = tqdm(total=len(missing), desc="embedding (cache shards)", unit="text",
                   disable=not self.progress or len(chunks) <= 1)
        n_new, busy = 0, []
        for chunk in chunks:
            lock = FileLock(str(self._lock_path(chunk)), timeout=0)
            try:
                lock.acquire()
            except Timeout:  # another process is computing it: do the free shards first
                busy.append(chunk)
                continue
            n_new += self._fill_locked(lock, chunk, by_key, compute, store, seen)
            bar.update(len(chunk))
        for chunk in busy:
            log.info("waiting for another process computing %d texts of %s", len(chunk), self.dir)
            lock = FileLock(str(self._lock_path(chunk)))
            lock.acquire()
            n_new += self._fill_locked(lock, chunk, by_key, compute, store, seen)
            bar.update(len(chunk))
        bar.close()
        if len(self._shards()) > MAX_SHARDS:
            self._compact()
        return n_new

    def _lock_path(self, chunk: list[str]) -> Path:
        return self.dir / f".{texts_hash(chunk)}.lock"

    def _fill_locked(self, lock, chunk: list[str], by_key: dict, compute: Callable, store: dict,
                     seen: set[str]) -> int:
        """With ``lock`` held: read the shards written since, compute what of ``chunk`` is still
        missing, write it; then remove the lock file and release. How many texts were computed."""
        try:
            self._load(store, seen)
            todo = [k for k in chunk if k not in store]
            if todo:
                new = np.asarray(compute([by_key[k] for k in todo]), dtype=np.float32)
                seen.add(self._write(todo, new).name)
                store.update(zip(todo, new))
            return len(todo)
        finally:
            # unlinked while held: filelock re-creates it for a waiter that then locked the old file,
            # and whoever holds it next reads the shard written above, so none are left behind
            Path(lock.lock_file).unlink(missing_ok=True)
            lock.release()

    def _write(self, keys: list[str], vectors: np.ndarray) -> Path:
        """Write one shard (atomically); its path."""
        if vectors.ndim != 2 or len(vectors) != len(keys):
            raise ValueError(f"featurizer returned shape {vectors.shape} for {len(keys)} texts; expected ({len(keys)}, dim)")
        self.dir.mkdir(parents=True, exist_ok=True)
        ident = self.dir / "identity.txt"
        if not ident.exists():
            atomic_write(ident, lambda tmp: Path(tmp).write_text(self.identity, encoding="utf-8"))
        path = self.dir / f"{texts_hash(keys)}.npz"
        self._save(path, keys, vectors)
        self._remove_stale_tmp()
        return path

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
