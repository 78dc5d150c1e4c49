"""Onboarding plumbing: reading prompt files, and `predict.py mode=onboard` without a model (fast)."""
from __future__ import annotations

import pandas as pd
import pytest

from assessors.errors import DataError, OfflineError
from assessors.onboarding.prompts import read_prompts
from llama_server import free_port


def test_read_prompts_real_files(data_dir, tmp_path):
    d = data_dir / "open_llm_leaderboard_v2" / "prompts"
    df = read_prompts([d / "bbh_navigate_prompts.csv", d / "bbh_object_counting_prompts.csv"], limit=3)
    assert len(df) == 6 and set(df["subgroup"]) == {"bbh_navigate", "bbh_object_counting"}
    assert list(df.columns[:3]) == ["instance_id", "prompt", "target"]
    raw = pd.read_csv(d / "bbh_navigate_prompts.csv", dtype=str)["id"].head(3)
    assert df["instance_id"].tolist()[:3] == ("bbh_navigate/" + raw).tolist()  # as the loader names them
    ids = tmp_path / "ids.txt"
    ids.write_text("\n".join(df["instance_id"].iloc[[0, 4]]))
    assert read_prompts([d / "bbh_navigate_prompts.csv", d / "bbh_object_counting_prompts.csv"],
                        ids=set(ids.read_text().split()))["instance_id"].tolist() == df["instance_id"].iloc[[0, 4]].tolist()
    j = tmp_path / "p.jsonl"
    pd.DataFrame({"id": ["a"], "prompt": ["q"], "target": ["1"], "subgroup": ["s"]}).to_json(j, orient="records", lines=True)
    assert read_prompts([j]).iloc[0].to_dict() == {"instance_id": "a", "prompt": "q", "target": "1", "subgroup": "s"}
    with pytest.raises(DataError, match="missing column 'target'"):
        pd.DataFrame({"id": ["a"], "prompt": ["q"]}).to_csv(tmp_path / "x.csv", index=False)
        read_prompts([tmp_path / "x.csv"])
    with pytest.raises(DataError, match="not found"):
        read_prompts([tmp_path / "nope.csv"])


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
