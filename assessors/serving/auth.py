"""API-key authentication: ``Authorization: Bearer <key>`` or ``X-API-Key: <key>``.

Keys are read from environment variables named in the configuration (never from the config
itself). Auth can be switched off only for a server bound to a loopback address.
"""
from __future__ import annotations

import hmac
import ipaddress
import os
from typing import Sequence

from assessors.errors import ConfigError

LOOPBACK_NAMES = {"localhost"}


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def keys_from_env(env_names: Sequence[str]) -> list[str]:
    """API keys from the named environment variables (each may hold several, comma-separated)."""
    keys: list[str] = []
    for name in env_names:
        keys += [k.strip() for k in os.environ.get(name, "").split(",") if k.strip()]
    return keys


class APIKeyChecker:
    """Constant-time check of a presented key against the configured keys.

    Parameters
    ----------
    keys : list of str
        Accepted keys; empty only when auth is disabled.
    enabled : bool
    """

    def __init__(self, keys: Sequence[str], enabled: bool = True):
        self._keys = [k.encode() for k in keys]
        self.enabled = enabled

    @classmethod
    def from_settings(cls, enabled: bool, api_keys_env: Sequence[str], host: str) -> "APIKeyChecker":
        if not enabled:
            if not is_loopback(host):
                raise ConfigError(f"auth.enabled=false is only allowed on a loopback host, not {host!r}")
            return cls([], enabled=False)
        keys = keys_from_env(api_keys_env)
        if not keys:
            raise ConfigError(f"auth is enabled but none of the environment variables {list(api_keys_env)} holds "
                              "an API key; set one (e.g. export ASSESSORS_API_KEYS=...) or, on localhost only, "
                              "server.auth.enabled=false")
        if any(len(k) < 16 for k in keys):
            raise ConfigError("API keys must be at least 16 characters long")
        return cls(keys)

    def check(self, authorization: str | None, x_api_key: str | None) -> bool:
        if not self.enabled:
            return True
        presented = x_api_key
        if presented is None and authorization:
            scheme, _, token = authorization.partition(" ")
            presented = token.strip() if scheme.lower() == "bearer" else None
        if not presented:
            return False
        p = presented.encode()
        ok = False
        for k in self._keys:  # compare against every key: timing does not reveal which one matched
            ok |= hmac.compare_digest(p, k)
        return ok
