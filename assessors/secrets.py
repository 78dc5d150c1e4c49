"""Redaction of credentials: the one place that decides what a secret looks like.

Two kinds of settings hold secrets:

* key-like settings (``api_key``, ``token``, ``password``, ...), matched on the last component of
  the setting's name; ``*_env`` settings are exempt because they hold only the *name* of an
  environment variable;
* URLs with credentials, wherever they appear in a value or a log message: the user-info part
  ``scheme://user:password@host/...``, and every query parameter that is not clearly harmless
  (:func:`is_secret_query`): one named like a credential (``key``, ``sig``, ``code``, ``token``,
  ...) or whose value looks like one (:func:`looks_like_credential`), whatever its name;
* values that look like a credential anywhere (``sk-...`` keys and other known token prefixes,
  JWTs), whatever the setting is called.

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
#: ``?name=value`` / ``&name=value`` query parameters.
_QUERY_PARAM = re.compile(r"(?P<name>[?&][\w\-.~%\[\]]+=)(?P<value>[^&#\s'\"]+)")
#: Words in a query parameter's name that make its value a secret (``x-api-key``, ``sig``, ``code``).
_SECRET_PARAM_WORDS = frozenset("key apikey token secret password passwd pwd sig signature code auth authorization "
                                "credential credentials session sessionid jwt sas bearer".split())
#: Tokens that are credentials by their shape alone: provider key prefixes and JWTs (``eyJ...``).
_CREDENTIAL = re.compile(
    r"(?<![\w\-])(?:sk[-_][\w\-]{12,}|(?:pk|rk)_(?:live|test)_\w{8,}|gh[pousr]_\w{20,}|github_pat_\w{20,}"
    r"|glpat-[\w\-]{20,}|xox[abprs]-[\w\-]{10,}|hf_[A-Za-z]{30,}|(?:AKIA|ASIA)[A-Z0-9]{16}|AIza[\w\-]{35}"
    r"|ya29\.[\w\-]{20,}|eyJ[\w\-]{8,}\.[\w\-]{8,}\.[\w\-]*)")
#: A run of letters and digits as long as a random key (``7f3a9c0e1b2d4f5a6b7c``).
_RANDOM_RUN = re.compile(r"[A-Za-z0-9]{16,}")
MASK = "***"


def looks_like_credential(value: Any, strict: bool = False) -> bool:
    """Whether ``value`` looks like a credential, whatever it is called.

    Always: a known key prefix (``sk-``, ``ghp_``, ``hf_``, ``AKIA``, ...) or a JWT. With ``strict``
    (the values of URL query parameters, where random-looking strings are keys, signatures or codes):
    also a run of at least 16 letters and digits that mixes both, or of 20 letters that mixes upper
    and lower case. Words, numbers, dates and versions (``2024-02-15-preview``,
    ``text-embedding-3-small``) are not.
    """
    if not isinstance(value, str) or not value:
        return False
    from urllib.parse import unquote

    text = unquote(value)
    if _CREDENTIAL.search(text):
        return True
    if not strict:
        return False
    for run in _RANDOM_RUN.findall(text):
        letters, digits = any(c.isalpha() for c in run), any(c.isdigit() for c in run)
        mixed_case = any(c.islower() for c in run) and any(c.isupper() for c in run)
        if letters and digits or len(run) >= 20 and mixed_case:
            return True
    return False


def is_secret_query(name: str, value: str) -> bool:
    """Whether the URL query parameter ``name=value`` is a secret: it is unless it is clearly harmless,
    i.e. its name holds none of the credential words (``key``, ``sig``, ``code``, ``token``, ...) and its
    value does not look like a credential (:func:`looks_like_credential` with ``strict``)."""
    from urllib.parse import unquote

    words = re.split(r"[^a-z0-9]+", unquote(name).lower())
    return bool(_SECRET_PARAM_WORDS.intersection(words)) or looks_like_credential(value, strict=True)


def is_secret_key(name: Any) -> bool:
    """Whether a setting named ``name`` holds a secret (``*_env`` names never do)."""
    name = str(name).rsplit(".", 1)[-1]
    return bool(SECRET_KEY.search(name)) and not name.endswith("_env")


def redact_text(text: str) -> str:
    """``text`` with credentials replaced by ``***``: a URL's user and password, the value of every
    query parameter that is not clearly harmless (:func:`is_secret_query`), and credential-shaped
    tokens anywhere (:func:`looks_like_credential`)."""
    if "://" in text:
        text = _URL_USERINFO.sub(lambda m: f"{m['scheme']}{MASK}@", text)
    if "=" in text:
        text = _QUERY_PARAM.sub(lambda m: f"{m['name']}{MASK}" if is_secret_query(m["name"][1:-1], m["value"])
                                else m[0], text)
    return _CREDENTIAL.sub(MASK, text)


def has_secret_text(text: str) -> bool:
    """Whether ``text`` holds a credential (a URL with one, or a credential-shaped token)."""
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
    return (f"refusing to run: {', '.join(paths)} hold(s) a literal secret (a key, a credential-like value, or a URL "
            "with user:password or a query parameter that is not clearly harmless, e.g. ?key=, ?sig=, ?code=), "
            "which Hydra would write to .hydra/{config,hydra,overrides}.yaml. Put it in an environment variable "
            "and name it with the matching *_env setting (e.g. features.api_key_env=MY_KEY, "
            "features.base_url_env=MY_EMBEDDING_URL), or reference it as ${oc.env:MY_VAR}.")
