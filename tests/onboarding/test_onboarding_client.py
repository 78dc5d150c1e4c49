"""Onboarder against an in-process fake OpenAI-compatible endpoint (fast, no server).

The fake is an httpx MockTransport handed to the real ``openai`` client, so request
building, retries, response parsing, journaling and resume run for real.
"""
from __future__ import annotations

import json
import math
import threading

import numpy as np
import pandas as pd
import pytest

from assessors.errors import ConfigError, DataError, OfflineError
from assessors.onboarding.client import Onboarder
from assessors.onboarding.grader_map import GraderMap
from assessors.onboarding.graders import ExactMatch, MultipleChoiceLetter, NumericAnswer
from assessors.onboarding.journal import Journal

try:  # openai>=3 ships its own httpx fork
    import httpx2 as httpx
except ImportError:  # pragma: no cover
    import httpx

MC = "Pick one.\nOptions:\n(A) red\n(B) blue\n(C) green"


class FakeEndpoint:
    """Answers each prompt from a table; 'tokens' are the answer's characters."""

    def __init__(self, answers: dict[str, str], fail: set[str] = frozenset(), key: str | None = None):
        self.answers, self.fail, self.key = answers, set(fail), key
        self.seen: list[str] = []
        self.bodies: list[dict] = []
        self.lock = threading.Lock()

    def __call__(self, request):
        body = json.loads(request.content)
        prompt = body["messages"][-1]["content"]
        with self.lock:
            self.seen.append(prompt)
            self.bodies.append(body)
        if self.key and request.headers.get("authorization") != f"Bearer {self.key}":
            return httpx.Response(401, json={"error": {"message": "bad key"}})
        if prompt in self.fail:
            return httpx.Response(500, json={"error": {"message": "boom"}})
        ans = self.answers[prompt]
        content = None
        if body.get("logprobs"):
            content = [{"token": c, "logprob": math.log(0.8), "bytes": None,
                        "top_logprobs": [{"token": c, "logprob": math.log(0.8), "bytes": None},
                                         {"token": "A" if c != "A" else "B", "logprob": math.log(0.2), "bytes": None}]}
                       for c in ans]
        return httpx.Response(200, json={
            "id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": ans},
                         "logprobs": {"content": content} if content is not None else None}],
            "usage": {"prompt_tokens": len(prompt.split()), "completion_tokens": len(ans),
                      "total_tokens": len(prompt.split()) + len(ans)},
        })

    def client(self):
        import openai

        return openai.DefaultHttpxClient(transport=httpx.MockTransport(self))


def _prompts(n: int = 8) -> tuple[pd.DataFrame, dict[str, str]]:
    rows, answers = [], {}
    for i in range(n):
        if i % 2:
            p, t, a, sg = f"{MC}\nItem {i}", "(B)", "B" if i % 4 == 1 else "C", "bbh_x"
        else:
            p, t, a, sg = f"How many? item {i}", str(i), str(i if i % 4 == 0 else i + 1), "bbh_object_counting"
        rows.append({"instance_id": f"id{i}", "prompt": p, "target": t, "subgroup": sg})
        answers[p] = a
    return pd.DataFrame(rows), answers


def _onboarder(**kw) -> Onboarder:
    gm = GraderMap({"bbh_*": MultipleChoiceLetter(), "*object_counting": NumericAnswer()}, default=ExactMatch())
    args = dict(base_url="http://fake/v1", model="fake-model", graders=gm, concurrency=2, max_retries=0,
                top_logprobs=2, show_progress=False)
    args.update(kw)
    return Onboarder(**args)


def test_onboard_grades_counts_tokens_and_confidences(tmp_path):
    df, answers = _prompts(8)
    fake = FakeEndpoint(answers)
    res, summary = _onboarder(price_per_1k_prompt=1.0, price_per_1k_completion=2.0).run(
        df, tmp_path, http_client=fake.client())
    want = np.array([1, 1, 0, 0, 1, 1, 0, 0], dtype=np.float32)  # from how _prompts builds answers
    assert res.llms == ["fake-model"] and res.instance_ids == list(df["instance_id"])
    np.testing.assert_array_equal(res.success[0], want)
    assert summary["accuracy"] == pytest.approx(0.5) and summary["n_queried"] == 8
    ptok = sum(len(p.split()) for p in df["prompt"])
    ctok = sum(len(answers[p]) for p in df["prompt"])
    assert (summary["prompt_tokens"], summary["completion_tokens"]) == (ptok, ctok)
    assert res.cost[0].sum() == pytest.approx((ptok + 2 * ctok) / 1000, rel=1e-5)
    conf = res.confidence[0]
    assert np.all((conf >= 0) & (conf <= 1))
    # MC items: label B/C vs alternative "A" -> 0.8/(0.8+0.2); numeric items: exp(mean log 0.8)
    np.testing.assert_allclose(conf[1::2], 0.8, rtol=1e-6)
    np.testing.assert_allclose(conf[0::2], 0.8, rtol=1e-6)
    assert summary["confidence_kinds"] == {"label": 4, "sequence": 4}
    body = fake.bodies[0]
    assert body["temperature"] == 0.0 and body["logprobs"] is True and body["top_logprobs"] == 2
    # outputs on disk
    assert len((tmp_path / "journal.jsonl").read_text().splitlines()) == 8
    assert json.loads((tmp_path / "summary.json").read_text())["n_items"] == 8
    from assessors.data.results import Results

    back = Results.from_parquet(tmp_path / "results")
    np.testing.assert_array_equal(back.success, res.success)
    np.testing.assert_allclose(back.confidence, res.confidence)


def test_interrupted_run_resumes_without_requerying(tmp_path):
    df, answers = _prompts(10)
    first = FakeEndpoint(answers)
    seen = []

    def stop_after_4(rec):
        seen.append(rec["instance_id"])
        if len(seen) == 4:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _onboarder(concurrency=1).run(df, tmp_path, http_client=first.client(), on_item=stop_after_4)
    journaled = Journal(tmp_path / "journal.jsonl").load()
    assert sorted(journaled) == sorted(seen)
    # a crash mid-write leaves a torn line: it must be dropped, not break the resume
    with open(tmp_path / "journal.jsonl", "a") as fh:
        fh.write('{"instance_id": "id9", "answ')
    second = FakeEndpoint(answers)
    res, summary = _onboarder(concurrency=3).run(df, tmp_path, http_client=second.client())
    by_prompt = dict(zip(df["prompt"], df["instance_id"]))
    requeried = {by_prompt[p] for p in second.seen}
    assert len(second.seen) == 6 and requeried == set(df["instance_id"]) - set(seen)
    assert summary["n_resumed"] == 4 and summary["n_queried"] == 6 and summary["n_answered"] == 10
    # a third run queries nothing
    third = FakeEndpoint(answers)
    _, s3 = _onboarder().run(df, tmp_path, http_client=third.client())
    assert third.seen == [] and s3["n_queried"] == 0 and s3["accuracy"] == summary["accuracy"]


def test_changed_settings_requery_and_failures_are_retried_next_run(tmp_path):
    df, answers = _prompts(4)
    bad = df["prompt"].iloc[1]
    fake = FakeEndpoint(answers, fail={bad})
    res, summary = _onboarder().run(df, tmp_path, http_client=fake.client())
    assert np.isnan(res.success[0, 1]) and summary["n_missing"] == 1 and summary["n_request_errors"] == 1
    ok = FakeEndpoint(answers)
    _, s2 = _onboarder().run(df, tmp_path, http_client=ok.client())
    assert ok.seen == [bad] and s2["n_missing"] == 0
    # another system prompt is another request: everything is re-queried
    again = FakeEndpoint(answers)
    _onboarder(system_prompt="Be brief.").run(df, tmp_path, http_client=again.client())
    assert len(again.seen) == 4 and again.bodies[0]["messages"][0] == {"role": "system", "content": "Be brief."}


def test_api_key_from_env_is_used_and_never_written(tmp_path, monkeypatch, caplog):
    df, answers = _prompts(2)
    secret = "sk-test-SECRET-123"
    monkeypatch.setenv("FAKE_KEY", secret)
    fake = FakeEndpoint(answers, key=secret)
    with caplog.at_level("DEBUG"):
        _onboarder(api_key_env="FAKE_KEY").run(df, tmp_path, http_client=fake.client())
    assert len(fake.seen) == 2
    for f in tmp_path.rglob("*"):
        if f.is_file():
            assert secret.encode() not in f.read_bytes(), f
    assert secret not in caplog.text
    monkeypatch.delenv("FAKE_KEY")
    with pytest.raises(ConfigError, match="FAKE_KEY"):
        _onboarder(api_key_env="FAKE_KEY").run(df, tmp_path / "b", http_client=fake.client())


def test_wrong_key_stops_and_dead_endpoint_is_reported(tmp_path):
    import openai

    df, answers = _prompts(4)
    with pytest.raises(openai.AuthenticationError):
        _onboarder().run(df, tmp_path / "a", http_client=FakeEndpoint(answers, key="other").client())
    dead = FakeEndpoint(answers, fail=set(df["prompt"]))
    with pytest.raises(OfflineError, match="no answers"):
        _onboarder().run(df, tmp_path / "b", http_client=dead.client())


def test_bad_prompts_and_unknown_subgroup(tmp_path):
    df, _ = _prompts(2)
    with pytest.raises(DataError, match="missing column"):
        _onboarder().run(df.drop(columns="target"), tmp_path)
    with pytest.raises(DataError, match="duplicated instance_id 'id0'"):
        _onboarder().run(pd.concat([df, df]), tmp_path)
    with pytest.raises(DataError, match="empty prompt for instance_id 'id1'"):
        _onboarder().run(df.assign(prompt=["x", " "]), tmp_path)
    gm = GraderMap({"bbh_*": MultipleChoiceLetter()})
    with pytest.raises(ConfigError, match="no grader matches"):
        _onboarder(graders=gm).run(df.assign(subgroup="musr_x"), tmp_path)
