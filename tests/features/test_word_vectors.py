"""Word2Vec / FastText featurizers: trained on prompts or loaded from a vectors file."""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

from assessors.errors import DataError
from assessors.features.word_vectors import FastTextFeaturizer, Word2VecFeaturizer

SMALL = dict(vector_size=16, epochs=3, min_count=1)


@pytest.fixture(scope="module")
def w2v(train_prompts):
    return Word2VecFeaturizer(**SMALL).fit(train_prompts)


def test_word2vec_shape_and_mean(w2v, prompts):
    x = w2v.transform(prompts)
    assert x.shape == (len(prompts), 16) and x.dtype == np.float32
    assert np.abs(x).sum(axis=1).min() > 0
    words = ["not", "true", "and"]
    np.testing.assert_allclose(w2v.transform(["Not TRUE and qqqqq"])[0],
                               np.mean([w2v.wv_[w] for w in words], axis=0), rtol=1e-6)
    np.testing.assert_array_equal(w2v.transform(["qqqqq zzzzz", ""]), np.zeros((2, 16), np.float32))


def test_word2vec_deterministic_in_process(w2v, train_prompts, prompts):
    again = Word2VecFeaturizer(**SMALL).fit(train_prompts)
    np.testing.assert_array_equal(w2v.transform(prompts), again.transform(prompts))
    other_seed = Word2VecFeaturizer(**SMALL, seed=1).fit(train_prompts)
    assert not np.allclose(w2v.transform(prompts), other_seed.transform(prompts))


SCRIPT = """
import hashlib, sys
from assessors.features.word_vectors import Word2VecFeaturizer
texts = [l for l in sys.stdin.read().split("\\n\\x00\\n")]
x = Word2VecFeaturizer(vector_size=8, epochs=2, min_count=1).fit(texts).transform(texts[:5])
print(hashlib.sha256(x.tobytes()).hexdigest())
"""


@pytest.mark.slow
def test_word2vec_deterministic_across_processes(train_prompts):
    """Same seed, different PYTHONHASHSEED (salted str hashes, set order): same vectors."""
    data = "\n\x00\n".join(train_prompts[:40])
    digests = set()
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        out = subprocess.run([sys.executable, "-c", SCRIPT], input=data, capture_output=True, text=True,
                             env=env, check=True, timeout=300)
        digests.add(out.stdout.strip())
    assert len(digests) == 1


def test_vectors_file_roundtrip_and_cache_key(w2v, prompts, tmp_path):
    path = tmp_path / "vectors.kv"
    w2v.wv_.save(str(path))
    loaded = Word2VecFeaturizer(vectors_path=str(path), cache_dir=str(tmp_path / "c")).fit(["ignored"])
    np.testing.assert_allclose(loaded.transform(prompts), w2v.transform(prompts), rtol=1e-6)
    txt = tmp_path / "vectors.txt"
    w2v.wv_.save_word2vec_format(str(txt), binary=False)
    from_txt = Word2VecFeaturizer(vectors_path=str(txt)).fit([])
    np.testing.assert_allclose(from_txt.transform(prompts), w2v.transform(prompts), atol=1e-5)
    # Same path, new content: the cache key changes with the file, not only with its name.
    id_before = loaded.identity()
    w2v.wv_.vectors[:] *= 2
    w2v.wv_.save(str(path))
    w2v.wv_.vectors[:] /= 2
    assert Word2VecFeaturizer(vectors_path=str(path)).fit([]).identity() != id_before
    with pytest.raises(DataError, match="not found"):
        Word2VecFeaturizer(vectors_path=str(tmp_path / "missing.kv")).fit([])


def test_fasttext_handles_unseen_words(train_prompts, prompts, tmp_path):
    f = FastTextFeaturizer(**SMALL, bucket=5000, cache_dir=str(tmp_path)).fit(train_prompts)
    x = f.transform(prompts + ["qqqqq-unseenword"])
    assert x.shape == (len(prompts) + 1, 16) and x.dtype == np.float32
    assert np.abs(x[-1]).sum() > 0  # composed from character n-grams
    np.testing.assert_array_equal(f.transform([""]), np.zeros((1, 16), np.float32))
    np.testing.assert_array_equal(f.transform(prompts), x[:-1])  # from the cache now


def test_unfitted_raises():
    with pytest.raises(NotFittedError):
        Word2VecFeaturizer().transform(["x"])
