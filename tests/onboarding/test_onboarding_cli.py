"""CLI plumbing: composing the Hydra config (fast); the prompts reader is tested in tests/data/test_prompts.py."""
from __future__ import annotations

import pytest

from assessors.errors import OfflineError
from assessors.onboarding.cli import main
from llama_server import free_port


def test_cli_reports_unreachable_endpoint(data_dir, tmp_path):
    f = data_dir / "open_llm_leaderboard_v2" / "prompts" / "bbh_navigate_prompts.csv"
    with pytest.raises(OfflineError, match="no answers from http://127.0.0.1"):
        main(["--prompts", str(f), "--limit", "2", "--out", str(tmp_path),
              f"base_url=http://127.0.0.1:{free_port()}/v1", "max_retries=0", "show_progress=false"])
    # the failed attempts are journaled as errors, so a rerun retries them
    assert (tmp_path / "journal.jsonl").read_text().count('"error": "APIConnectionError') == 2
