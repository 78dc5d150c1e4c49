"""Fixtures for the data-layer tests: the real shared data and small copies of it in tmp_path."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """Local copy of the public data: ASSESSORS_DATA_DIR, default /work/shared/data."""
    path = Path(os.environ.get("ASSESSORS_DATA_DIR", "/work/shared/data")).resolve()
    if not path.exists():
        pytest.fail(f"real data not found at {path}; set ASSESSORS_DATA_DIR")
    return path


@pytest.fixture
def copy_files(tmp_path, data_dir):
    """Copy chosen real files (paths relative to data_dir) into tmp_path/data, keeping the layout."""

    def _copy(*rel: str) -> Path:
        root = tmp_path / "data"
        for r in rel:
            dst = root / r
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(data_dir / r, dst)
            dst.chmod(0o644)
        return root

    return _copy


@pytest.fixture(scope="session")
def bbh_musr(data_dir):
    """The default BBH+MuSR Results (loaded once per session)."""
    from assessors.data.loaders.open_llm_leaderboard_v2 import load_open_llm_leaderboard_v2

    return load_open_llm_leaderboard_v2(root=data_dir)
