"""Redaction of credentials: the one place that decides what a secret looks like.

Two kinds of settings hold secrets:

* key-like settings (``api_key``, ``token``, ``password``, ...), matched on the last component of
  the setting's name; ``*_env`` settings are exempt because they hold only the *name* of an
  environment variable;
* URLs with credentials, ``scheme://user:password@host/...`` or ``?api_key=...`` in the query,
  wherever they appear in a value or a log message.

Everything that persists a setting (MLflow params and tags, pickled featurizers, the embedding
cache's identity, log handlers) goes through :func:`redact` or :func:`redact_text`; Hydra's own
output files are protected by :func:`find_secrets`, which the task layer's Hydra callback
(:class:`assessors.tasks.secrets_callback.RefuseSecretsCallback`) runs before Hydra writes them.
"""
from __future__ import annotations

import logging
import re
from typing import Any, Iterable

#: Setting names whose values are secrets (matched on the last path component).
SECRET_KEY = re.compile(r"(?:^|[_\-.])(?:api[_\-]?key|access[_\-]?key|apikey|token|secret|password|passwd|pwd"
                        r"|authorization|credentials?)(?:$|[_\-.])", re.I)
#: ``scheme://user[:password]@`` -- the userinfo part of a URL.
_URL_USERINFO = re.compile(r"(?P<scheme>\b[a-z][a-z0-9+.\-]*://)(?P<userinfo>[^/\s@'\"]+)@", re.I)
#: ``?api_key=...`` / ``&token=...`` query parameters.
_QUERY_SECRET = re.compile(r"(?P<name>[?&](?:[\w\-]*?)(?:api[_-]?key|token|secret|password|passwd|signature)"
                           r"[\w\-]*=)(?P<value>[^&#\s'\"]+)", re.I)
MASK = "***"


def is_secret_key(name: Any) -> bool:
    """Whether a setting named ``name`` holds a secret (``*_env`` names never do)."""
    name = str(name).rsplit(".", 1)[-1]
    return bool(SECRET_KEY.search(name)) and not name.endswith("_env")


def redact_text(text: str) -> str:
    """``text`` with URL credentials replaced by ``***`` (user and password, and secret query values)."""
    if "://" not in text and "=" not in text:
        return text
    text = _URL_USERINFO.sub(lambda m: f"{m['scheme']}{MASK}@", text)
    return _QUERY_SECRET.sub(lambda m: f"{m['name']}{MASK}", text)


def has_secret_text(text: str) -> bool:
    """Whether ``text`` holds a URL with credentials."""
    return redact_text(text) != text


def redact(value: Any, key: Any = None) -> Any:
    """A copy of ``value`` (str, dict, list, tuple or scalar) safe to persist.

    Values of key-like settings become ``"***"`` (None stays None); strings anywhere lose URL
    credentials; containers are redacted recursively with their keys as setting names.
    """
    if key is not None and is_secret_key(key) and isinstance(value, str) and value:
        return MASK
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {k: redact(v, k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redact(v) for v in value)
    return value


def find_secrets(cfg: dict | list, prefix: str = "") -> list[str]:
    """Paths of settings in a config, as plain unresolved containers, that hold a literal secret.

    Interpolations such as ``${oc.env:MY_KEY}`` are not literal secrets: Hydra stores the
    interpolation, not the value (so the config must be converted without resolving them).
    ``hydra.overrides`` are included (they repeat the command line).
    """
    _require_plain(cfg, "find_secrets")
    found: list[str] = []
    items: Iterable = cfg.items() if isinstance(cfg, dict) else enumerate(cfg) if isinstance(cfg, list) else ()
    for k, v in items:
        path = f"{prefix}.{k}" if prefix else str(k)
        if isinstance(v, (dict, list)):
            found += find_secrets(v, path)
        elif isinstance(v, str) and "${" not in v and (has_secret_text(v) or _override_sets_secret(v)):
            found.append(path)
        elif isinstance(v, str) and "${" not in v and is_secret_key(k) and v:
            found.append(path)
    return found


def _require_plain(cfg: Any, what: str) -> None:
    """Refuse a mapping or sequence that is not a plain dict or list (an unconverted config node):
    walking it would resolve the interpolations that must stay text."""
    if not isinstance(cfg, (dict, list)) and hasattr(cfg, "__iter__") and not isinstance(cfg, (str, bytes)):
        raise TypeError(f"{what} takes plain containers, got {type(cfg).__name__}: convert the config first "
                        "(OmegaConf.to_container(cfg, resolve=False))")


def _override_sets_secret(text: str) -> bool:
    """A command-line override ``a.api_key=value`` (as stored in ``hydra.overrides``)."""
    for part in text.split(","):
        m = re.match(r"^[+~]*([\w.\-@/]+)=(.*)$", part.strip())
        if m and is_secret_key(m[1]) and m[2] not in ("", "null") and "${" not in m[2]:
            return True
    return False


class RedactingFilter(logging.Filter):
    """Logging filter that removes URL credentials from every record it sees (install on handlers)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            msg = record.getMessage()
        except Exception:  # a broken format string: let the handler report it as usual
            return True
        clean = redact_text(msg)
        if clean != msg:
            record.msg, record.args = clean, None
        return True


#: Third-party loggers that print request URLs (with any credentials in them) at INFO/DEBUG.
HTTP_LOGGERS = ("httpx", "httpx2", "httpcore", "httpcore2", "openai", "urllib3", "requests")


def quiet_http_loggers() -> None:
    """Drop HTTP client log records below WARNING (they print request URLs)."""
    for name in HTTP_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)


def protect_logging() -> None:
    """Quiet HTTP client loggers below WARNING and redact every handler of the root logger."""
    quiet_http_loggers()
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())


def secret_refusal(paths: list[str]) -> str:
    """The error message for settings that would write a secret to disk."""
    return (f"refusing to run: {', '.join(paths)} hold(s) a literal secret (a key or a URL with user:password), "
            "which Hydra would write to .hydra/{config,hydra,overrides}.yaml. Put it in an environment variable "
            "and name it with the matching *_env setting (e.g. features.api_key_env=MY_KEY, "
            "features.base_url_env=MY_EMBEDDING_URL), or reference it as ${oc.env:MY_VAR}.")
