"""The array memo: equal arrays hit, changed ones miss, the oldest goes first, pickles empty."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

from assessors.memo import ArrayMemo


def test_equal_arrays_hit_and_changed_ones_miss():
    calls = []
    memo = ArrayMemo(size=2)
    f = lambda X: calls.append(1) or X.sum(1)  # noqa: E731
    X = np.arange(12, dtype=np.float32).reshape(3, 4)
    a = memo.get(X, f)
    assert memo.get(X.copy(), f) is a and len(calls) == 1  # another object, same content
    assert not a.flags.writeable
    Y = X.copy()
    Y[0, 0] = 99
    assert memo.get(Y, f)[0] == pytest.approx(105) and len(calls) == 2
    assert memo.get(X.reshape(4, 3), lambda X: X.shape) == (4, 3)  # same bytes, other shape: a miss
    memo.get(X, f)  # X was the oldest of three: evicted
    assert len(calls) == 3
    clone = pickle.loads(pickle.dumps(memo))
    clone.get(X, f)
    assert len(calls) == 4 and clone.size == 2
    assert len(memo) == 2
