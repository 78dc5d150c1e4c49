"""Small thread-safe memos of results computed from arrays.

* :class:`ArrayMemo`, keyed by the array's content. Fitted components that answer the same query set
  again and again (a server's candidate pool, a trust report's target prompts) keep the last few
  answers. The key is a digest of the array's float32 bytes and its shape, so an equal array hits and
  a changed one misses, whatever object holds it. The memo is never pickled: an unpickled owner
  starts with an empty one.
* :class:`FrozenMemo`, keyed by the array object itself, for read-only arrays that own their data
  (their content cannot change behind the memo): a result is kept while its array lives, so a value
  as costly as a content hash is computed once per array (the benchmark harness's source matrix of a
  split, read by every method and size). Any other array is computed on every call.
"""
from __future__ import annotations

import hashlib
import threading
import weakref
from collections import OrderedDict
from typing import Callable

import numpy as np


def array_key(X) -> str:
    """Digest of ``X``'s float32 bytes and its shape."""
    X = np.ascontiguousarray(X, dtype=np.float32)
    return hashlib.blake2b(X.tobytes(), digest_size=16).hexdigest() + str(X.shape)


class ArrayMemo:
    """Least-recently-used results of ``fn(X)`` keyed by :func:`array_key` (at most ``size`` kept).

    Results are stored read-only when they are arrays, since later callers share them.
    """

    def __init__(self, size: int = 4):
        self.size = size
        self._memo: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, X, fn: Callable):
        """``fn(X)``, from the memo when an equal ``X`` was asked before."""
        key = array_key(X)
        with self._lock:
            if key in self._memo:
                self._memo.move_to_end(key)
                return self._memo[key]
        out = fn(X)
        if isinstance(out, np.ndarray):
            out.setflags(write=False)
        with self._lock:
            self._memo[key] = out
            while len(self._memo) > self.size:
                self._memo.popitem(last=False)
        return out

    def __len__(self) -> int:
        return len(self._memo)

    def __getstate__(self):
        return {"size": self.size}

    def __setstate__(self, state):
        self.__init__(state["size"])


class FrozenMemo:
    """``fn(X)`` kept while ``X`` lives, when ``X`` is a read-only array that owns its data; computed on
    every call for any other ``X`` (a writeable array may change in place, a view with its base).

    Entries are keyed by ``id(X)`` and leave with their array (a weak reference's callback), so the
    memo never keeps an array alive nor answers for a new array at a reused address.
    """

    def __init__(self, fn: Callable):
        self.fn = fn
        self._memo: dict[int, tuple[weakref.ref, object]] = {}
        self._lock = threading.RLock()  # re-entrant: an entry's callback may run in a collection under it

    @staticmethod
    def frozen(X) -> bool:
        """Whether ``X`` is a read-only array that owns its data (so its content is fixed)."""
        return isinstance(X, np.ndarray) and not X.flags.writeable and X.base is None

    def get(self, X):
        """``fn(X)``, from the memo when ``X`` is frozen and was asked before."""
        if not self.frozen(X):
            return self.fn(X)
        ident = id(X)
        with self._lock:
            hit = self._memo.get(ident)
        if hit is not None and hit[0]() is X:
            return hit[1]
        out = self.fn(X)

        def forget(ref: weakref.ref) -> None:
            with self._lock:
                if self._memo.get(ident, (None,))[0] is ref:
                    del self._memo[ident]

        with self._lock:
            self._memo[ident] = (weakref.ref(X, forget), out)
        return out

    def __len__(self) -> int:
        return len(self._memo)
