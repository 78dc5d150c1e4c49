"""Shared fixtures: real data location and Hydra config composition with tiny overrides."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CONF = ROOT / "conf"

# Tests never reach a hub: the bundled MiniLM loads offline.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("MPLBACKEND", "Agg")


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The local copy of the public data (ASSESSORS_DATA_DIR, else ../shared/data)."""
    path = Path(os.environ.get("ASSESSORS_DATA_DIR", ROOT.parent / "shared" / "data")).resolve()
    if not path.exists():
        pytest.fail(f"real data not found at {path}; set ASSESSORS_DATA_DIR")
    return path


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory) -> Path:
    """One embedding cache for the whole test session (embedding is the slow part)."""
    return Path(os.environ.get("ASSESSORS_TEST_CACHE", tmp_path_factory.mktemp("cache")))


@pytest.fixture
def compose(tmp_path, data_dir, shared_cache):
    """Compose ``conf/<config_name>.yaml`` with overrides, outputs under ``tmp_path``."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    def _compose(overrides=(), config_name: str = "train"):
        base = [f"paths.data_dir={data_dir}", f"paths.cache_dir={shared_cache}", f"paths.outputs={tmp_path}/outputs"]
        with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
            return hydra_compose(config_name=config_name, overrides=base + list(overrides))

    return _compose


def prepare_small(out: Path, data_dir: Path, overrides) -> "object":
    """``assessors.tasks.prepare.prepare`` on the real data with tiny overrides (for module fixtures)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    from assessors.tasks.prepare import prepare

    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = hydra_compose("train", overrides=[f"paths.data_dir={data_dir}", f"paths.outputs={out}", *overrides])
    return prepare(cfg)


def small_prep(name: str, subtasks: list[str], n_train: int, n_val: int, n_test: int):
    """A module-scoped ``prep`` fixture: :func:`prepare_small` on BBH ``subtasks`` with success-pattern
    features and an LLM split of ``n_train``/``n_val``/``n_test`` LLMs (assign it to ``prep`` in a test module)."""
    overrides = [f"data.subtasks=[{','.join(subtasks)}]", "features=success_pattern",
                 f"llm_split.n_train={n_train}", f"llm_split.n_val={n_val}", f"llm_split.n_test={n_test}"]

    @pytest.fixture(scope="module")
    def prep(tmp_path_factory, data_dir):
        return prepare_small(tmp_path_factory.mktemp(name), data_dir, overrides)

    return prep
