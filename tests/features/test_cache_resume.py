"""The embedding cache writes shards as they finish: a crash or SIGKILL loses at most one shard."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from assessors.features.cache import EmbeddingCache

ROOT = Path(__file__).resolve().parents[2]


def _vectors(texts):
    return np.array([[len(t), t.count("a")] for t in texts], dtype=np.float32).reshape(-1, 2)


def test_crash_keeps_finished_shards_and_rerun_continues(tmp_path):
    texts = [f"text {i} " + "a" * (i % 7) for i in range(50)]
    calls = []

    def dies_on_third(chunk):
        calls.append(len(chunk))
        if len(calls) == 3:
            raise KeyboardInterrupt("killed")
        return _vectors(chunk)

    with pytest.raises(KeyboardInterrupt):
        EmbeddingCache(tmp_path, "toy", shard_size=10).get_or_compute(texts, dies_on_third)
    assert calls == [10, 10, 10]
    assert len(list(tmp_path.rglob("*.npz"))) == 2 and not list(tmp_path.rglob("*.tmp"))
    computed = []

    def counting(chunk):
        computed.extend(chunk)
        return _vectors(chunk)

    out = EmbeddingCache(tmp_path, "toy", shard_size=10).get_or_compute(texts, counting)
    assert computed == texts[20:]  # the two finished shards are reused, in order
    np.testing.assert_array_equal(out, _vectors(texts))


def test_many_shards_are_merged_and_lookups_still_exact(tmp_path):
    texts = [f"t{i}" for i in range(170)]
    cache = EmbeddingCache(tmp_path, "toy", shard_size=10)  # 17 shards > MAX_SHARDS
    out = cache.get_or_compute(texts, _vectors)
    assert len(list(tmp_path.rglob("*.npz"))) == 1
    np.testing.assert_array_equal(out, _vectors(texts))
    again = EmbeddingCache(tmp_path, "toy").get_or_compute(texts[::-1], lambda t: pytest.fail("recomputed"))
    np.testing.assert_array_equal(again, _vectors(texts[::-1]))


def test_identity_file_has_no_url_credentials(tmp_path):
    cache = EmbeddingCache(tmp_path, "OpenAI:{'base_url': 'http://bob:hunter2@h/v1'}")
    cache.get_or_compute(["x"], _vectors)
    assert "hunter2" not in (cache.dir / "identity.txt").read_text()


SLOW_EMBED = """
import sys, time
import numpy as np
from assessors.features.cache import EmbeddingCache
texts = [f"text {i}" for i in range(400)]
def slow(chunk):
    time.sleep(0.25)
    return np.array([[len(t), 1.0] for t in chunk], dtype=np.float32)
EmbeddingCache(sys.argv[1], "toy", shard_size=20).get_or_compute(texts, slow)
"""


def test_sigkill_mid_embedding_loses_at_most_one_shard(tmp_path):
    """A real SIGKILL of a process that is embedding; the rerun embeds only what is missing."""
    script = tmp_path / "embed.py"
    script.write_text(SLOW_EMBED)
    proc = subprocess.Popen([sys.executable, str(script), str(tmp_path / "cache")], cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    deadline = time.time() + 60
    while len(list((tmp_path / "cache").rglob("*.npz"))) < 3 and time.time() < deadline:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    shards = list((tmp_path / "cache").rglob("*.npz"))
    assert 3 <= len(shards) < 20, "the run finished before the kill: the test proves nothing"
    texts = [f"text {i}" for i in range(400)]
    computed = []

    def counting(chunk):
        computed.extend(chunk)
        return np.array([[len(t), 1.0] for t in chunk], dtype=np.float32)

    out = EmbeddingCache(tmp_path / "cache", "toy", shard_size=20).get_or_compute(texts, counting)
    assert len(computed) == 400 - 20 * len(shards)  # finished shards reused, nothing computed twice
    np.testing.assert_array_equal(out[:, 0], [len(t) for t in texts])
