"""What serving tests share besides fixtures: the test API key and waiting for a warm app.

A module of its own, not ``conftest``: ``from conftest import ...`` resolves to whichever test
directory's conftest came first on ``sys.path`` when several directories are collected together.
"""
from __future__ import annotations

API_KEY = "test-key-0123456789abcdef"


def wait_ready(c, timeout: float = 60.0) -> dict:
    """Poll ``/health`` until the app has loaded and warmed up; its last body."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        r = c.get("/health")
        if r.status_code == 200 or time.monotonic() > deadline:
            assert r.status_code == 200, r.text
            return r.json()
        assert r.json()["status"] == "starting"
        time.sleep(0.05)
