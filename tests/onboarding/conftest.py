"""Fixture: a real llama-cpp-python OpenAI-compatible server on loopback (slow tests only)."""
from __future__ import annotations

import pytest

from llama_server import MODEL_ALIAS, llama_cpp_missing, llama_server


@pytest.fixture(scope="module")
def llama_base_url(tmp_path_factory):
    """``http://127.0.0.1:<free port>/v1`` of a running server; terminated after the module."""
    reason = llama_cpp_missing()
    if reason:
        pytest.skip(reason)
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with llama_server(log_path=log) as base:
        yield base


@pytest.fixture(scope="module")
def llama_model() -> str:
    return MODEL_ALIAS
