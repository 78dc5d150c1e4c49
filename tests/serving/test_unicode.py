"""A lone surrogate in a request string is a 422 naming the field, not a 500 and a dropped connection."""
from __future__ import annotations

import pytest

from assessors.serving.schemas import ChatCompletionRequest, PredictRequest


@pytest.mark.parametrize("path", ["/v1/predict", "/v1/route"])
def test_lone_surrogate_in_a_prompt_is_422(client, path):
    body = b'{"prompts": ["fine", "bad \\ud800 text"]}'  # valid JSON, invalid Unicode
    r = client.post(path, content=body, headers={"Content-Type": "application/json"})
    assert r.status_code == 422, r.text
    err = r.json()["error"]
    assert err["type"] == "validation_error" and "prompts[1]" in err["message"] and "surrogate" in err["message"]
    ok = client.post(path, json={"prompts": ["caf\u00e9 \U0001F600"]})  # real non-ASCII text still works
    assert ok.status_code == 200, ok.text


def test_schema_checks_nested_and_extra_fields():
    with pytest.raises(ValueError, match=r"messages\[0\]|content"):
        ChatCompletionRequest.model_validate_json(b'{"model": "m", "messages": [{"role": "user", "content": "\\udfff"}]}')
    with pytest.raises(ValueError, match="user"):
        ChatCompletionRequest.model_validate_json(b'{"model": "m", "messages": [{"role": "user"}], "user": "\\ud83d"}')
    assert PredictRequest.model_validate_json(b'{"prompts": ["\\ud83d\\ude00"]}').prompts == ["\U0001F600"]
