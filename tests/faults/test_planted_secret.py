"""A secret planted in the settings of a tiny real run appears in no file and no log line.

The secret is the password of the embedding server's URL (``http://bob:<secret>@host/v1``) and
the API key. Through Hydra (train.py), a literal one is refused before Hydra writes anything; from
environment variables (``*_env``) the run works and persists neither. Through the Python API
(composed config, no Hydra output files) the literal URL reaches the featurizer and is used, and
MLflow params, the pickled model, the cache identity and the logs still hold none of it.
"""
from __future__ import annotations

import base64
import logging
from pathlib import Path

import pytest

from tests.faults.conftest import TINY, n_embedded, run_statuses

pytestmark = pytest.mark.slow

SECRET = "pl4nted-Pa55word-7f3a"
KEY = "sk-planted-key-91c2e"


def _sweep(*roots: Path) -> list[str]:
    """Files under ``roots`` that contain the secret or the key (plain or in Basic-auth base64)."""
    needles = [s.encode() for s in (SECRET, KEY)] + [base64.b64encode(f"bob:{SECRET}".encode())]
    hits, n = [], 0
    for root in roots:
        for path in Path(root).rglob("*"):
            if path.is_file():
                n += 1
                data = path.read_bytes()
                hits += [f"{path}: {needle!r}" for needle in needles if needle in data]
    assert n > 0, f"nothing to sweep under {roots}"
    return hits


def _url(srv) -> str:
    return srv.url.replace("http://", f"http://bob:{SECRET}@")


def test_hydra_refuses_literal_secrets_before_writing(embed_server, train_run, tmp_path):
    for bad in (f"features.base_url={_url(embed_server)}", f"+features.api_key={KEY}"):
        over = [o for o in TINY if not o.startswith("features.base_url_env")] + [bad]
        out = train_run(*over, env={"EMBED_KEY": "x"})
        assert out.returncode != 0
        assert "refusing to run" in out.stderr and "_env" in out.stderr, out.stderr[-2000:]
        assert SECRET not in out.stdout + out.stderr and KEY not in out.stdout + out.stderr
    assert not (tmp_path / "outputs").exists() or not _sweep(tmp_path / "outputs")
    assert n_embedded(embed_server) == 0


def test_secret_from_environment_persists_nowhere(embed_server, train_run, tmp_path):
    env = {"EMBED_URL": _url(embed_server), "EMBED_KEY": KEY}
    # INFO logging everywhere, so that an HTTP client logging the request URL would show up
    out = train_run(*TINY, "hydra.job_logging.root.level=INFO", env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    assert n_embedded(embed_server) == 428
    assert embed_server.auth[0].startswith("Basic ")  # the credentials of the URL were used
    assert run_statuses(tmp_path / "outputs") == ["FINISHED"]
    assert (tmp_path / "outputs" / "mlartifacts").exists() and list((tmp_path / "cache").rglob("identity.txt"))
    assert list((tmp_path / "outputs").rglob("*.log")) and list((tmp_path / "outputs").rglob(".hydra/*.yaml"))
    assert _sweep(tmp_path / "outputs", tmp_path / "cache") == []
    for stream in (out.stdout, out.stderr):
        assert SECRET not in stream and KEY not in stream


def test_literal_secret_through_python_api(embed_server, compose, tmp_path, caplog, capsys, monkeypatch):
    from assessors.tasks.train import train_assessors

    monkeypatch.setenv("EMBED_KEY", KEY)
    over = [o for o in TINY if not o.startswith("features.base_url_env")]
    cfg = compose(over + [f"features.base_url={_url(embed_server)}", f"paths.cache_dir={tmp_path / 'cache'}"])
    with caplog.at_level(logging.DEBUG):
        train_assessors(cfg)
    assert n_embedded(embed_server) == 428
    out = capsys.readouterr()
    assert SECRET not in caplog.text and KEY not in caplog.text
    assert SECRET not in out.out + out.err
    assert _sweep(tmp_path / "outputs", tmp_path / "cache") == []
