"""Data location: explicit root > ASSESSORS_DATA_DIR > verified download into the cache (no real network)."""
from __future__ import annotations

import hashlib

import pytest

from assessors.data import download
from assessors.data.download import locate
from assessors.data.manifest import SourceFile
from assessors.errors import ChecksumError, DataError, OfflineError

REL = "Big-Bench-Hard__snarks_results.csv"


@pytest.fixture
def no_env(monkeypatch):
    for v in ("ASSESSORS_DATA_DIR", "HF_HUB_OFFLINE", "ASSESSORS_OFFLINE"):
        monkeypatch.delenv(v, raising=False)


def _source(monkeypatch, data_dir, sha=None, url=None):
    src = data_dir / "open_llm_leaderboard_v2" / "results" / REL
    real = hashlib.sha256(src.read_bytes()).hexdigest()
    f = SourceFile(f"results/{REL}", url or src.as_uri(), real if sha is None else sha)
    monkeypatch.setitem(download.SOURCES, "fake", [f])
    return src, real


def test_root_beats_env(monkeypatch, data_dir, tmp_path):
    monkeypatch.setenv("ASSESSORS_DATA_DIR", str(tmp_path))
    assert locate("routerbench", root=data_dir) == data_dir / "routerbench"
    monkeypatch.setenv("ASSESSORS_DATA_DIR", str(data_dir))
    assert locate("routerbench") == data_dir / "routerbench"


def test_download_verified_atomic_and_cached(no_env, monkeypatch, data_dir, tmp_path):
    src, real = _source(monkeypatch, data_dir)
    dest = locate("fake", cache_dir=tmp_path)
    out = dest / "results" / REL
    assert out.read_bytes() == src.read_bytes()
    assert not list(out.parent.glob(".*.tmp"))
    monkeypatch.setattr(download, "fetch", lambda *a, **k: pytest.fail("re-downloaded a cached file"))
    assert locate("fake", cache_dir=tmp_path) == dest


def test_checksum_mismatch_leaves_no_file(no_env, monkeypatch, data_dir, tmp_path):
    _source(monkeypatch, data_dir, sha="0" * 64)
    with pytest.raises(ChecksumError, match=rf"{REL}: checksum mismatch"):
        locate("fake", cache_dir=tmp_path)
    assert not (tmp_path / "fake" / "results" / REL).exists()
    assert not list((tmp_path / "fake" / "results").glob("*"))


def test_corrupted_cached_file(no_env, monkeypatch, data_dir, tmp_path):
    _source(monkeypatch, data_dir)
    out = locate("fake", cache_dir=tmp_path) / "results" / REL
    out.write_bytes(out.read_bytes()[:100])  # truncated after download
    with pytest.raises(ChecksumError, match=rf"{REL}: checksum mismatch"):
        locate("fake", cache_dir=tmp_path)


def test_unreachable_source_is_offline_error(no_env, monkeypatch, data_dir, tmp_path):
    monkeypatch.setattr(download, "TIMEOUT", 2.0)
    _source(monkeypatch, data_dir, url="http://127.0.0.1:9/unreachable.csv")  # discard port: refused at once
    with pytest.raises(OfflineError, match="offline.*ASSESSORS_DATA_DIR.*data.root="):
        locate("fake", cache_dir=tmp_path)


def test_offline_flag_fails_fast(no_env, monkeypatch, data_dir, tmp_path):
    _source(monkeypatch, data_dir)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(download, "fetch", lambda *a, **k: pytest.fail("tried the network while offline"))
    with pytest.raises(OfflineError, match="ASSESSORS_DATA_DIR"):
        locate("fake", cache_dir=tmp_path)


def test_real_loader_offline_without_copy(no_env, monkeypatch, tmp_path):
    from assessors.data.loaders.open_llm_leaderboard_v2 import load_open_llm_leaderboard_v2

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(OfflineError, match="machine is offline.*ASSESSORS_DATA_DIR"):
        load_open_llm_leaderboard_v2(cache_dir=tmp_path)


def test_no_public_source(no_env, tmp_path):
    from assessors.data.loaders.score_matrix import load_score_matrix

    with pytest.raises(DataError, match="no public download; set ASSESSORS_DATA_DIR"):
        load_score_matrix("musr", cache_dir=tmp_path)


def test_manifest_checksums_match_local_copy(data_dir):
    for name, files in download.SOURCES.items():
        for f in files:
            download.verify(data_dir / name / f.path, f.sha256)
