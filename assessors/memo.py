"""A small thread-safe memo of results computed from arrays, keyed by the array's content.

Fitted components that answer the same query set again and again (a server's candidate pool, a
trust report's target prompts) keep the last few answers. The key is a digest of the array's
float32 bytes and its shape, so an equal array hits and a changed one misses, whatever object holds
it. The memo is never pickled: an unpickled owner starts with an empty one.
"""
from __future__ import annotations

import hashlib
import threading
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
