"""The array memo: equal arrays hit, changed ones miss, the oldest goes first, pickles empty."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

from assessors.memo import ArrayMemo, FrozenMemo


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


def test_frozen_memo_keeps_a_result_while_its_read_only_array_lives():
    calls = []
    memo = FrozenMemo(lambda X: calls.append(1) or float(X.sum()))
    X = np.arange(6.0)
    X.setflags(write=False)
    assert memo.get(X) == memo.get(X) == 15.0 and len(calls) == 1
    assert memo.get(X.copy()) == 15.0 and len(calls) == 2  # another object: computed again
    W = np.arange(6.0)  # writeable: may change in place, so never kept
    memo.get(W)
    W[0] = 10
    assert memo.get(W) == 25.0 and len(calls) == 4
    view = X[1:]  # a view: its content follows its base, never kept
    memo.get(view), memo.get(view)
    assert len(calls) == 6 and len(memo) == 1
    del X, view  # the view holds its base
    assert len(memo) == 0  # the entry left with its array
