"""Onboarding plumbing: `predict.py mode=onboard` without a model (fast); the prompts reader is tested in tests/data/test_prompts.py."""
from __future__ import annotations

import pytest

from assessors.errors import OfflineError
from llama_server import free_port


def test_onboard_without_a_model_reports_unreachable_endpoint(compose, data_dir, tmp_path):
    from assessors.tasks.onboard import run

    f = data_dir / "open_llm_leaderboard_v2" / "prompts" / "bbh_navigate_prompts.csv"
    cfg = compose(["mode=onboard", "model_uri=null", f"onboard.prompts=[{f}]", "onboard.limit=2",
                   f"onboard.out_dir={tmp_path}", f"onboarding.base_url=http://127.0.0.1:{free_port()}/v1",
                   "onboarding.max_retries=0", "onboarding.show_progress=false"], config_name="predict")
    with pytest.raises(OfflineError, match="no answers from http://127.0.0.1"):
        run(cfg)
    # the failed attempts are journaled as errors, so a rerun retries them
    assert (tmp_path / "journal.jsonl").read_text().count('"error": "APIConnectionError') == 2
