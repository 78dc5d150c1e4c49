"""The app factory's default engine: built from :class:`ServerSettings` alone."""
from __future__ import annotations

from assessors.errors import ConfigError
from assessors.routing.engine import Engine
from assessors.routing.setup import build_engine


def engine_from_settings(settings, router=None, trust=None) -> Engine:
    """Load ``settings.model_uri`` and register the LLMs configured there, with ``router`` (the routing
    policy the settings' ``router`` node describes, built by the caller) and ``trust`` (the trust
    options or a built callable; default: the settings' options)."""
    if settings.router and router is None:
        raise ConfigError("the server settings name a router but none was built: start the server with "
                          "`predict.py mode=serve`, which builds it")
    return build_engine(settings.model_uri, router, settings.llms, settings.known_llms,
                        settings.default_cost, settings.trust if trust is None else trust, settings.embed_cache_size,
                        tracking_uri=settings.tracking_uri, precision=settings.precision)
