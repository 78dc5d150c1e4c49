"""One redaction rule for every place a setting persists (assessors/secrets.py)."""
from __future__ import annotations

import logging
import pickle

import pytest

from assessors.secrets import RedactingFilter, find_secrets, is_secret_key, redact, redact_text
from assessors.tasks.config import plain
from assessors.tasks.secrets_callback import RefuseSecretsCallback

SECRET = "hunter2-secret"


@pytest.mark.parametrize("text, clean", [
    (f"http://bob:{SECRET}@host:8000/v1", "http://***@host:8000/v1"),
    (f"postgresql://app:{SECRET}@db/mlflow", "postgresql://***@db/mlflow"),
    (f"POST https://ghp_{SECRET}@github.com/x and more", "POST https://***@github.com/x and more"),
    (f"https://host/v1?api_key={SECRET}&model=m", "https://host/v1?api_key=***&model=m"),
    ("http://host:8000/v1", "http://host:8000/v1"),
    ("mail bob@example.com", "mail bob@example.com"),
    # any query parameter named like a credential, whatever its value looks like
    (f"http://host/v1?key=sk-{SECRET}", "http://host/v1?key=***"),
    ("https://acct.blob/c?sv=2024-08-04&sp=r&sig=AbC%2Fd3", "https://acct.blob/c?sv=2024-08-04&sp=r&sig=***"),
    ("https://f.azurewebsites.net/api/embed?code=zZ9-x", "https://f.azurewebsites.net/api/embed?code=***"),
    ("http://h/v1?x-api-key=1&access_token=2", "http://h/v1?x-api-key=***&access_token=***"),
    # any query value that looks like a credential, whatever its name
    ("http://h/v1?p=7f3a9c0e1b2d4f5a6b7c&q=1", "http://h/v1?p=***&q=1"),
    ("http://h/v1?auth_header=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.sig", "http://h/v1?auth_header=***"),
    ("http://h/v1?u=AbcdefGhijklMnopQrstUv", "http://h/v1?u=***"),
    # clearly harmless query values stay: words, numbers, dates, versions, model names
    ("https://x.openai.azure.com/v1?api-version=2024-02-15-preview&model=text-embedding-3-small&n=3",
     "https://x.openai.azure.com/v1?api-version=2024-02-15-preview&model=text-embedding-3-small&n=3"),
    ("postgresql://db/mlflow?sslmode=require", "postgresql://db/mlflow?sslmode=require"),
    # credential-shaped tokens anywhere in a message
    ("openai said: Incorrect API key provided: " + "sk" + "-proj-AbC123dEf456gHi", "openai said: Incorrect API key provided: ***"),
    ("a task-sk-like-name and sklearn", "a task-sk-like-name and sklearn"),
])
def test_redact_text(text, clean):
    assert redact_text(text) == clean


@pytest.mark.parametrize("value, strict, expected", [
    ("sk" + "-planted-key-91c2e", False, True), ("ghp_" + "a1" * 12, False, True), ("hf_" + "x" * 34, False, True),
    ("AKIA" + "A1B2C3D4E5F6G7H8", False, True), ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2ln", False, True),
    ("7f3a9c0e1b2d4f5a6b7c", False, False), ("7f3a9c0e1b2d4f5a6b7c", True, True),
    ("2024-02-15-preview", True, False), ("text-embedding-3-small", True, False), ("all-MiniLM-L6-v2", True, False),
    ("12345678901234567890", True, False), ("", True, False), (None, True, False),
])
def test_looks_like_credential(value, strict, expected):
    from assessors.secrets import looks_like_credential

    assert looks_like_credential(value, strict=strict) is expected


def test_query_keys_and_credential_values_are_refused_whatever_their_name(compose):
    key = "sk-" + SECRET
    for url in (f"http://h/v1?key={key}", "http://h/v1?sig=AbC%2Fd3", "http://h/v1?code=zZ9x", f"http://h/v1?p={key}"):
        cfg = compose(["features=openai", f"features.base_url='{url}'"])
        assert find_secrets(plain(cfg, resolve=False)) == ["features.base_url"]
    cfg = compose(["features=openai", "features.base_url='http://h/v1?api-version=2024-02-15'"])
    assert find_secrets(plain(cfg, resolve=False)) == []
    # a credential-shaped value is a secret under any setting name
    assert find_secrets(plain(compose([f"+features.model_hint={key}"]), resolve=False)) == ["features.model_hint"]


def test_key_like_settings():
    assert all(is_secret_key(k) for k in ("api_key", "OPENAI_API_KEY", "hf_token", "client_secret", "password"))
    assert not any(is_secret_key(k) for k in ("api_key_env", "max_tokens", "output_tokens", "tokenizer", "keys"))
    cfg = {"a": {"api_key": SECRET, "api_key_env": "MY_KEY", "max_tokens": 5, "url": f"http://u:{SECRET}@h"},
           "l": [f"http://u:{SECRET}@h"]}
    assert SECRET not in repr(redact(cfg))
    assert redact(cfg)["a"]["api_key_env"] == "MY_KEY" and redact(cfg)["a"]["max_tokens"] == 5


def test_find_secrets_ignores_interpolations_and_env_names(compose):
    cfg = compose(["features=openai", "features.base_url=${oc.env:EMBED_URL,null}"])
    assert find_secrets(plain(cfg, resolve=False)) == []
    cfg = compose(["features=openai", f"features.base_url=http://bob:{SECRET}@h/v1", f"+features.api_key={SECRET}"])
    assert set(find_secrets(plain(cfg, resolve=False))) == {"features.base_url", "features.api_key"}
    with pytest.raises(TypeError, match="to_container"):  # a node would resolve the interpolations
        find_secrets(cfg)


def test_an_upstream_base_url_with_a_key_is_refused(compose):
    from omegaconf import OmegaConf

    cfg = OmegaConf.create({"server": {"upstreams": {"my-llm": {"base_url": f"http://h/v1?key=sk-{SECRET}",
                                                                 "model": "m"}}}})
    assert find_secrets(plain(cfg, resolve=False)) == ["server.upstreams.my-llm.base_url"]
    with pytest.raises(SystemExit, match="server.upstreams.my-llm.base_url") as e:
        RefuseSecretsCallback().on_run_start(config=cfg)
    assert SECRET not in str(e.value)


def test_callback_stops_the_run_before_hydra_writes(compose):
    from omegaconf import OmegaConf

    cfg = OmegaConf.create({"features": {"base_url": "http://h/v1"},
                            "hydra": {"overrides": {"task": [f"+x.password={SECRET}"]}}})
    with pytest.raises(SystemExit, match=r"hydra.overrides.task.0 .*\*_env") as e:
        RefuseSecretsCallback().on_run_start(config=cfg)
    assert SECRET not in str(e.value)
    RefuseSecretsCallback().on_multirun_start(config=OmegaConf.create({"a": "http://h/v1"}))  # clean: no exit


def test_log_filter_and_mlflow_params(caplog):
    from assessors.tracking import RunLogger, _redacted, flatten_config

    logger = logging.getLogger("some.http.client")
    handler = logging.StreamHandler()
    handler.addFilter(RedactingFilter())
    record = logger.makeRecord("x", logging.INFO, "f", 1, "HTTP Request: POST %s", (f"http://b:{SECRET}@h/v1",), None)
    handler.filter(record)
    assert SECRET not in record.getMessage() and "http://***@h/v1" in record.getMessage()
    flat = flatten_config({"features": {"base_url": f"http://b:{SECRET}@h/v1", "api_key": SECRET}})
    assert flat == {"features.base_url": "http://***@h/v1", "features.api_key": "***"}
    assert _redacted({"model_uri": f"https://u:{SECRET}@host/m", "token": SECRET}) == {
        "model_uri": "https://***@host/m", "token": "***"}
    assert isinstance(RunLogger(), RunLogger)


def test_openai_featurizer_keeps_no_url_credentials(monkeypatch, tmp_path):
    from assessors.features.openai import OpenAIEmbeddingFeaturizer

    url = f"http://bob:{SECRET}@127.0.0.1:9/v1"
    f = OpenAIEmbeddingFeaturizer(model="m", base_url=url, cache_dir=str(tmp_path))
    assert SECRET not in f.identity() and "http://***@127.0.0.1:9/v1" in f.identity()
    assert SECRET.encode() not in pickle.dumps(f)
    assert f._url() == url  # used as given in this process
    # from the environment: only the variable's name is a parameter; the identity names the server
    monkeypatch.setenv("EMBED_URL", url)
    g = OpenAIEmbeddingFeaturizer(model="m", base_url_env="EMBED_URL", cache_dir=str(tmp_path))
    assert g._url() == url and g.identity() == f.identity()
    assert SECRET.encode() not in pickle.dumps(g) and pickle.loads(pickle.dumps(g))._url() == url
    # without credentials the identity is what it always was (existing caches stay valid)
    h = OpenAIEmbeddingFeaturizer(model="m", base_url="http://127.0.0.1:9/v1")
    assert "'base_url': 'http://127.0.0.1:9/v1'" in h.identity() and "base_url_env" not in h.identity()


def test_an_upstream_error_names_its_url_without_the_key():
    """The 502 body and log line of a dead upstream name its URL with the query key masked."""
    import asyncio

    from assessors.serving.errors import UpstreamError
    from assessors.serving.routers.proxy import UpstreamClients, call_upstream
    from assessors.serving.settings import Upstream

    up = Upstream(base_url=f"http://127.0.0.1:9/v1?key=sk-{SECRET}", model="m", connect_timeout_s=0.5, max_retries=0)
    clients = UpstreamClients({"my-llm": up})
    with pytest.raises(UpstreamError) as e:
        asyncio.run(call_upstream(clients, "my-llm", up, [{"role": "user", "content": "hi"}], {}))
    assert SECRET not in str(e.value) and "http://127.0.0.1:9/v1?key=***" in str(e.value)
