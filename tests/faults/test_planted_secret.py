"""A secret planted in the settings of a tiny real run appears in no file and no log line.

The secrets are the password of the embedding server's URL (``http://bob:<secret>@host/v1``), the
API key, and credentials in the URL's query string (``?key=sk-...``, ``?sig=...``, ``?code=...``).
Through Hydra (train.py, and predict.py for an upstream's ``base_url``), a literal one is refused
before Hydra writes anything; from environment variables (``*_env``) the run works and persists
none. Through the Python API (composed config, no Hydra output files) the literal URL reaches the
featurizer and is used, and MLflow params, the pickled model, the cache identity and the logs still
hold none of it.
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
#: Credentials in a query string: a key, a signature and a function code, each named as services name them.
QUERY = {"key": "sk" + "-planted-query-4b1d9", "sig": "plantedSig0a1b2c3d4e", "code": "planted-code-77e1"}
NEEDLES = (SECRET, KEY, *QUERY.values())


def _leaks(text: str) -> list[str]:
    return [n for n in NEEDLES if n in text]


def _sweep(*roots: Path) -> list[str]:
    """Files under ``roots`` that contain a planted secret (plain or in Basic-auth base64)."""
    needles = [s.encode() for s in NEEDLES] + [base64.b64encode(f"bob:{SECRET}".encode())]
    hits, n = [], 0
    for root in roots:
        for path in Path(root).rglob("*"):
            if path.is_file():
                n += 1
                data = path.read_bytes()
                hits += [f"{path}: {needle!r}" for needle in needles if needle in data]
    assert n > 0, f"nothing to sweep under {roots}"
    return hits


def _url(srv, query: dict | None = None) -> str:
    """The server's URL with the planted password, and ``query`` as its query string."""
    url = srv.url.replace("http://", f"http://bob:{SECRET}@")
    return url + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


def test_hydra_refuses_literal_secrets_before_writing(embed_server, train_run, tmp_path):
    bare = embed_server.url
    bad_settings = [f"features.base_url={_url(embed_server)}", f"+features.api_key={KEY}"]
    bad_settings += [f"features.base_url='{bare}?{k}={v}'" for k, v in QUERY.items()]
    for bad in bad_settings:
        over = [o for o in TINY if not o.startswith("features.base_url_env")] + [bad]
        out = train_run(*over, env={"EMBED_KEY": "x"})
        assert out.returncode != 0
        assert "refusing to run" in out.stderr and "_env" in out.stderr, out.stderr[-2000:]
        assert "features." in out.stderr and not _leaks(out.stdout + out.stderr)
    assert not (tmp_path / "outputs").exists() or not _sweep(tmp_path / "outputs")
    assert n_embedded(embed_server) == 0


def test_predict_refuses_an_upstream_base_url_with_a_key(data_dir, tmp_path):
    """predict.py: an upstream's ``base_url`` with a key in its query is refused before Hydra writes."""
    import os
    import subprocess
    import sys

    from tests.faults.conftest import ROOT

    out = subprocess.run(
        [sys.executable, "predict.py", "mode=serve", f"paths.outputs={tmp_path / 'outputs'}",
         f"paths.data_dir={data_dir}", f"+server.upstreams.my-llm.base_url='http://127.0.0.1:9/v1?key={QUERY['key']}'",
         "+server.upstreams.my-llm.model=m"],
        env={**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}, capture_output=True, text=True,
        timeout=300, cwd=ROOT)
    assert out.returncode != 0
    assert "refusing to run" in out.stderr and "server.upstreams.my-llm.base_url" in out.stderr, out.stderr[-2000:]
    assert not _leaks(out.stdout + out.stderr)
    assert not (tmp_path / "outputs").exists() or not _sweep(tmp_path / "outputs")


def test_secret_from_environment_persists_nowhere(embed_server, train_run, tmp_path):
    env = {"EMBED_URL": _url(embed_server, QUERY), "EMBED_KEY": KEY}
    # INFO logging everywhere, so that an HTTP client logging the request URL would show up
    out = train_run(*TINY, "hydra.job_logging.root.level=INFO", env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    assert n_embedded(embed_server) == 428
    assert embed_server.auth[0].startswith("Basic ")  # the credentials of the URL were used
    assert run_statuses(tmp_path / "outputs") == ["FINISHED"]
    assert (tmp_path / "outputs" / "mlartifacts").exists() and list((tmp_path / "cache").rglob("identity.txt"))
    assert list((tmp_path / "outputs").rglob("*.log")) and list((tmp_path / "outputs").rglob(".hydra/*.yaml"))
    assert _sweep(tmp_path / "outputs", tmp_path / "cache") == []
    assert not _leaks(out.stdout) and not _leaks(out.stderr)


def test_literal_secret_through_python_api(embed_server, compose, tmp_path, caplog, capsys, monkeypatch):
    from assessors.tasks.train import train_assessors

    monkeypatch.setenv("EMBED_KEY", KEY)
    over = [o for o in TINY if not o.startswith("features.base_url_env")]
    cfg = compose(over + [f"features.base_url='{_url(embed_server, QUERY)}'", f"paths.cache_dir={tmp_path / 'cache'}"])
    with caplog.at_level(logging.DEBUG):
        train_assessors(cfg)
    assert n_embedded(embed_server) == 428
    out = capsys.readouterr()
    assert not _leaks(caplog.text)
    assert not _leaks(out.out + out.err)
    assert _sweep(tmp_path / "outputs", tmp_path / "cache") == []
