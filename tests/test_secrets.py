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
])
def test_redact_text(text, clean):
    assert redact_text(text) == clean


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
