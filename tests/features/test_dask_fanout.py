"""MiniLM fanned out over a 2-worker Dask LocalCluster: same vectors, same cache, nothing re-embedded."""
from __future__ import annotations

import logging

import numpy as np
import pytest

pytestmark = pytest.mark.slow


def test_fanout_matches_in_process_embedding_and_a_rerun_embeds_nothing(compose, data_dir, tmp_path, caplog):
    pytest.importorskip("distributed", reason="pip install -e '.[scale]'")
    from hydra.utils import instantiate

    from assessors.data.loaders.open_llm_leaderboard_v2 import load_open_llm_leaderboard_v2

    res = load_open_llm_leaderboard_v2(root=data_dir, subtasks=["bbh_navigate", "bbh_snarks"])
    texts = res.prompts()[:96] + res.prompts()[:8]  # repeated texts are embedded once
    cache = tmp_path / "emb"
    cfg = compose(["features=minilm_dask", f"features.featurizer.cache_dir={cache}", "features.chunk_size=24",
                   "features.min_texts=10", "features.featurizer.show_progress=false"])
    fan = instantiate(cfg.features)
    fan.fit(texts)
    X = fan.transform(texts)
    shards = sorted(p.name for p in cache.rglob("*.npz"))
    assert len(shards) == 4, "one atomic shard per chunk of 24 distinct texts, written by the workers"
    local = instantiate(cfg.features.featurizer, cache_dir=None).fit(texts).transform(texts)
    np.testing.assert_allclose(X, local, atol=1e-5)
    with caplog.at_level(logging.INFO):
        again = fan.transform(texts)
    np.testing.assert_array_equal(again, X)
    assert sorted(p.name for p in cache.rglob("*.npz")) == shards, "a rerun re-embeds nothing"
    assert fan.transform(texts[:5]).shape == (5, 384)  # below min_texts: in-process, no cluster
