"""Reaching an MLflow tracking server (``tracking=server``) before a job relies on it.

MLflow's HTTP client retries a refused connection with exponential backoff, so a job pointed at
a server that is down would sit for minutes before failing. One ``GET /health`` with a short
timeout turns that into an immediate error naming the URI. A server that goes down mid-run meets
the same backoff on every later request (seven retries up to 120 s apart by default, so a job would
wait for many minutes): :func:`bound_client_retries` caps it, so the job ends with an error instead.
"""
from __future__ import annotations

import os
import urllib.error
import urllib.request

from assessors.errors import TrackingError


def check_reachable(uri: str, timeout: float = 5.0) -> None:
    """Raise :class:`TrackingError` unless the server at ``uri`` answers its health check.

    Non-HTTP URIs (a SQLite or PostgreSQL store used directly, a local folder) are not checked.

    Parameters
    ----------
    uri : str
        MLflow tracking URI, e.g. ``http://mlflow-host:5000``.
    timeout : float
        Seconds to wait for the answer.
    """
    if not uri.startswith(("http://", "https://")):
        return
    url = uri.rstrip("/") + "/health"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            status = resp.status
    except urllib.error.HTTPError as e:
        status = e.code
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise TrackingError(
            f"MLflow tracking server {uri} is not reachable ({reason}). Start it (docs/scaling.md: "
            "`mlflow server --backend-store-uri postgresql://... --artifacts-destination ...`), fix "
            "tracking.tracking_uri, or use tracking=mlflow for the embedded SQLite store") from None
    if status != 200:
        raise TrackingError(f"MLflow tracking server {uri}: {url} answered HTTP {status}, not 200; is this an "
                            "MLflow server?")


#: MLflow's HTTP client settings for a tracking server, unless the environment sets them: three
#: retries 1, 2 and 4 s apart (a server restart or a brief network drop), 30 s per request.
CLIENT_RETRIES = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "3", "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
                  "MLFLOW_HTTP_REQUEST_TIMEOUT": "30"}


def bound_client_retries() -> None:
    """Cap MLflow's retries so that a server lost mid-run fails the job in seconds, not minutes.

    Values already in the environment (``MLFLOW_HTTP_REQUEST_*``) win.
    """
    for key, value in CLIENT_RETRIES.items():
        os.environ.setdefault(key, value)
