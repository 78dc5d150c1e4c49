"""The app factory's default engine: built from :class:`ServerSettings` alone."""
from __future__ import annotations

from assessors.routing.engine import Engine
from assessors.routing.setup import build_engine


def engine_from_settings(settings) -> Engine:
    """Load ``settings.model_uri`` and register the LLMs, router and trust options configured there."""
    return build_engine(settings.model_uri, settings.router, settings.llms, settings.known_llms,
                        settings.default_cost, settings.trust, settings.embed_cache_size,
                        tracking_uri=settings.tracking_uri, precision=settings.precision)
