"""StaticEmbeddingFeaturizer: distilled once from the bundled MiniLM (offline), then reused (slow:
the first distillation on a machine takes minutes; later runs load the saved table)."""
from __future__ import annotations

import pickle
import threading
import time

import numpy as np
import pytest
from sklearn.base import clone

from assessors.features.cache import EmbeddingCache
from assessors.features.static import DIGEST_FILE, StaticEmbeddingFeaturizer, default_model_dir

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def static():
    # the shared default model_dir: distilled once per machine, like the embedding cache
    f = StaticEmbeddingFeaturizer()
    _ = f.model
    return f


def test_distilled_table_is_saved_and_reloaded(static):
    path = static._saved_path()
    assert str(path).startswith(default_model_dir())
    assert (path / DIGEST_FILE).exists()
    again = StaticEmbeddingFeaturizer()
    assert np.array_equal(again.model.embedding, static.model.embedding)  # loaded, not distilled anew
    assert again.identity() == static.identity() and static._digest in static.identity()


def test_a_run_finding_the_distillation_under_way_says_so_waits_and_loads(static, monkeypatch, caplog):
    from filelock import FileLock

    distilled = []
    monkeypatch.setattr(StaticEmbeddingFeaturizer, "_distill_to", lambda self, path: distilled.append(path))
    lock = FileLock(str(static._saved_path()) + ".lock")
    lock.acquire()  # as a process distilling it would hold it
    f = StaticEmbeddingFeaturizer()
    with caplog.at_level("WARNING", logger="assessors.features.static"):
        t = threading.Thread(target=lambda: f.model)
        t.start()
        time.sleep(1.0)
        assert t.is_alive()  # waits for the lock
        lock.release()
        t.join(60)
    assert "another process is distilling" in caplog.text and "waiting for it" in caplog.text
    assert distilled == []  # the table the holder left is loaded, not distilled again
    assert np.array_equal(f.model.embedding, static.model.embedding)


def test_shape_norm_and_meaning(static, prompts):
    X = static.transform(prompts)
    assert X.shape == (len(prompts), 256) and X.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(X, axis=1), 1.0, atol=1e-4)
    a, b, c = static.transform(["The cat sat on the mat.", "A cat was sitting on the mat.",
                                "Quarterly revenue rose by four percent."])
    assert a @ b > a @ c + 0.2
    assert static.transform([]).shape == (0, 256)


def test_pickle_carries_the_table_and_clone_does_not(static, prompts):
    X = static.transform(prompts[:3])
    g = pickle.loads(pickle.dumps(static))
    assert g._model is not None  # a logged assessor serves with the vectors it was trained on
    np.testing.assert_array_equal(g.transform(prompts[:3]), X)
    c = clone(static)
    assert getattr(c, "_model", None) is None and c.get_params() == static.get_params()


def test_cache_semantics(static, prompts, tmp_path):
    f = StaticEmbeddingFeaturizer(cache_dir=str(tmp_path))
    X = f.transform(prompts)
    cache = EmbeddingCache(str(tmp_path), f.identity())
    assert list(cache.dir.glob("*.npz"))
    calls = []
    cached = cache.get_or_compute(prompts, lambda t: calls.append(t) or np.zeros((len(t), 256)))
    assert not calls and np.array_equal(cached, X)
    # runtime parameters leave the identity alone; the recipe changes it
    assert StaticEmbeddingFeaturizer(batch_size=7, model_dir=static.model_dir).identity() == f.identity()
    assert StaticEmbeddingFeaturizer(max_length=64).identity() != f.identity()


def test_truncation_makes_long_prompts_cheap_and_stable(static):
    long = "word " * 50_000
    x1, x2 = static.transform([long, long + "tail " * 10])
    np.testing.assert_allclose(x1, x2, atol=1e-6)  # both cut at max_length tokens


def test_missing_base_model_is_a_clear_error(tmp_path, monkeypatch):
    from assessors.errors import OfflineError

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    f = StaticEmbeddingFeaturizer(base_model="no-such-org/no-such-model", model_dir=str(tmp_path / "m"))
    with pytest.raises(OfflineError, match="no-such-org/no-such-model"):
        f.transform(["x"])
    assert [p.name for p in (tmp_path / "m").iterdir() if not p.name.endswith(".lock")] == []
