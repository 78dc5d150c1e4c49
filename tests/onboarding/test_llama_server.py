"""The loopback SmolLM2 server of ``llama_server.py`` answers a real BBH prompt with logprobs.

Started with its default launch (the model's extra buffer types off), the server decodes; with
``extra_bufts=True`` the llama-cpp-python 0.3.36 wheel built on an AVX-512 + AMX machine dies with
SIGSEGV on the first decode, which is what this test guards against.

Slow (starts a server): ``python -m pytest tests/onboarding/test_llama_server.py -m slow -q``.
"""
from __future__ import annotations

import pandas as pd
import pytest

from llama_server import MODEL_ALIAS, llama_cpp_missing, llama_server


@pytest.mark.slow
def test_default_server_answers_a_bbh_prompt_with_logprobs(data_dir, tmp_path):
    if llama_cpp_missing():
        pytest.skip(llama_cpp_missing())
    import openai

    prompt = pd.read_csv(data_dir / "open_llm_leaderboard_v2" / "prompts" / "bbh_navigate_prompts.csv",
                         dtype=str, keep_default_na=False)["prompt"].iloc[0]
    with llama_server(log_path=tmp_path / "server.log") as base:
        client = openai.OpenAI(base_url=base, api_key="sk-no-key-required", max_retries=0, timeout=120)
        r = client.chat.completions.create(model=MODEL_ALIAS, temperature=0.0, max_tokens=4, logprobs=True,
                                           top_logprobs=5, messages=[{"role": "user", "content": prompt}])
    assert r.usage.prompt_tokens > 50 and r.usage.completion_tokens >= 1
    assert r.choices[0].logprobs.content and len(r.choices[0].logprobs.content[0].top_logprobs) == 5
