"""The embedding cache: nothing recomputed, atomic shards, keyed by featurizer identity."""
from __future__ import annotations

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

from assessors.features.base import Featurizer
from assessors.features.cache import EmbeddingCache


class Counting(Featurizer):
    """Deterministic toy featurizer counting the texts it computes."""

    def __init__(self, scale: float = 1.0, batch_size: int = 8, cache_dir=None):
        super().__init__(cache_dir=cache_dir)
        self.scale = scale
        self.batch_size = batch_size
        self.computed: list[str] = []

    def _transform(self, texts):
        self.computed.extend(texts)
        return np.array([[len(t) * self.scale, t.count("a")] for t in texts], dtype=np.float32).reshape(-1, 2)


class Learning(Counting):
    learns_from_texts = True

    def _fit(self, texts):
        self.n_train_ = len(texts)


class Boom(RuntimeError):
    pass


def test_second_transform_computes_nothing(tmp_path):
    texts = ["abc", "a", "abc", "zzzz"]
    f = Counting(cache_dir=str(tmp_path))
    x1 = f.transform(texts)
    assert f.computed == ["abc", "a", "zzzz"]  # duplicates computed once
    f2 = Counting(cache_dir=str(tmp_path))
    x2 = f2.transform(texts)
    assert f2.computed == []
    assert x1.dtype == np.float32 and x1.shape == (4, 2)
    np.testing.assert_array_equal(x1, x2)
    f2.transform(texts + ["new"])
    assert f2.computed == ["new"]  # only the missing text


def test_empty_input_keeps_dim(tmp_path):
    assert Counting(cache_dir=str(tmp_path)).transform([]).shape == (0, 2)
    assert Counting().transform([]).shape == (0, 2)


def test_failing_compute_leaves_no_shard(tmp_path):
    class Failing(Counting):
        def _transform(self, texts):
            raise Boom("killed mid-embedding")

    with pytest.raises(Boom):
        Failing(cache_dir=str(tmp_path)).transform(["abc", "de"])
    assert not list(tmp_path.rglob("*.npz")) and not list(tmp_path.rglob("*.tmp"))
    f = Counting(cache_dir=str(tmp_path))
    f.transform(["abc", "de"])
    assert f.computed == ["abc", "de"]


def test_killed_write_leaves_no_corrupt_shard(tmp_path, monkeypatch):
    """A write that dies half-way leaves neither a partial shard nor a temp file."""
    real_savez = np.savez

    def dying_savez(file, **arrays):
        file.write(b"PK\x03\x04 half a zip")
        raise Boom("killed during write")

    monkeypatch.setattr(np, "savez", dying_savez)
    with pytest.raises(Boom):
        Counting(cache_dir=str(tmp_path)).transform(["abc", "de"])
    assert not list(tmp_path.rglob("*.npz")) and not list(tmp_path.rglob("*.tmp"))
    monkeypatch.setattr(np, "savez", real_savez)
    f = Counting(cache_dir=str(tmp_path))
    np.testing.assert_array_equal(f.transform(["abc", "de"]), [[3, 1], [2, 0]])


def test_truncated_shard_is_ignored_and_recomputed(tmp_path):
    f = Counting(cache_dir=str(tmp_path))
    f.transform(["abc", "de"])
    (shard,) = list(tmp_path.rglob("*.npz"))
    shard.write_bytes(shard.read_bytes()[:40])  # e.g. a copy cut short
    f2 = Counting(cache_dir=str(tmp_path))
    np.testing.assert_array_equal(f2.transform(["abc", "de"]), [[3, 1], [2, 0]])
    assert f2.computed == ["abc", "de"]


def test_identity_separates_models_not_runtime_params(tmp_path):
    a = Counting(scale=1.0, cache_dir=str(tmp_path))
    b = Counting(scale=2.0, cache_dir=str(tmp_path))
    xa, xb = a.transform(["abcd"]), b.transform(["abcd"])
    assert xa[0, 0] == 4 and xb[0, 0] == 8  # no collision between the two output spaces
    assert a.identity() != b.identity()
    assert EmbeddingCache(tmp_path, a.identity()).dir != EmbeddingCache(tmp_path, b.identity()).dir
    c = Counting(scale=1.0, batch_size=99, cache_dir=str(tmp_path))  # batch size does not change values
    assert c.identity() == a.identity()
    c.transform(["abcd"])
    assert c.computed == []


def test_learned_featurizer_keyed_by_training_corpus(tmp_path):
    f = Learning(cache_dir=str(tmp_path))
    with pytest.raises(NotFittedError):
        f.transform(["x"])
    id1 = f.fit(["a b", "c"]).identity()
    id2 = Learning(cache_dir=str(tmp_path)).fit(["a b", "d"]).identity()
    id3 = Learning(cache_dir=str(tmp_path)).fit(["a b", "c"]).identity()
    assert id1 != id2 and id1 == id3


@pytest.mark.parametrize("progress", [True, False])
def test_shard_bar_follows_the_progress_switch(tmp_path, capfd, progress):
    texts = [f"text {i}" for i in range(5)]
    out = EmbeddingCache(tmp_path, "toy", shard_size=2, progress=progress).get_or_compute(
        texts, lambda t: np.ones((len(t), 3), np.float32))
    assert out.shape == (5, 3)
    assert ("embedding (cache shards)" in capfd.readouterr().err) == progress
