"""UnigramFeaturizer: the documented normalisation, on a toy corpus and real prompts."""
from __future__ import annotations

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

from assessors.features.ngrams import UnigramFeaturizer


def test_exact_normalisation_on_toy_corpus():
    train = ["a b b", "b c"]  # N_train = 5 tokens; f(a)=1/5, f(b)=3/5, f(c)=1/5
    f = UnigramFeaturizer(max_features=10).fit(train)
    assert list(f.vocabulary_) == ["a", "b", "c"]
    x = f.transform(["b b a d", "", "zzz"])  # "d", "zzz" are out of vocabulary but count in the length
    expected = np.array([[(1 / 4) / (1 / 5), (2 / 4) / (3 / 5), 0.0], [0, 0, 0], [0, 0, 0]], np.float32)
    np.testing.assert_allclose(x, expected, rtol=1e-6)
    assert x.dtype == np.float32


def test_vocabulary_cap_keeps_most_frequent():
    f = UnigramFeaturizer(max_features=1).fit(["a b b", "b c"])
    assert list(f.vocabulary_) == ["b"]
    np.testing.assert_allclose(f.transform(["b"]), [[1 / (3 / 5)]], rtol=1e-6)  # N_train stays 5


def test_real_prompts(train_prompts, prompts, tmp_path):
    f = UnigramFeaturizer(max_features=300, cache_dir=str(tmp_path)).fit(train_prompts)
    x = f.transform(prompts)
    assert x.shape == (len(prompts), 300) and x.dtype == np.float32
    assert (x >= 0).all() and (x.sum(axis=1) > 0).all()
    # Single-letter options ("(A)") and "true"/"false" are kept as words.
    assert "a" in f.vocabulary_ and "true" in f.vocabulary_
    np.testing.assert_array_equal(x, UnigramFeaturizer(max_features=300).fit(train_prompts).transform(prompts))
    other = UnigramFeaturizer(max_features=300, cache_dir=str(tmp_path)).fit(train_prompts[:50])
    assert other.identity() != f.identity()  # training corpus is part of the cache key


def test_unfitted_raises():
    with pytest.raises(NotFittedError):
        UnigramFeaturizer().transform(["x"])
