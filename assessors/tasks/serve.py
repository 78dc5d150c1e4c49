"""``predict.py mode=serve``: the HTTP API (FastAPI + uvicorn) with the configured model, router and LLMs."""
from __future__ import annotations

import logging
import os

from omegaconf import DictConfig

from assessors.errors import ConfigError
from assessors.tasks.config import built, plain
from assessors.tasks.predict_common import calibrate, engine_from_cfg, tracking_uri_from_cfg

log = logging.getLogger("assessors.predict")


def server_settings(cfg: DictConfig):
    """``cfg.server`` with the model, router, LLMs and trust options as :class:`ServerSettings`."""
    from assessors.serving.settings import ServerSettings

    return ServerSettings.model_validate({**plain(cfg.server), "model_uri": cfg.model_uri,
                                          "tracking_uri": tracking_uri_from_cfg(cfg),
                                          "router": plain(cfg.get("router")), "llms": plain(cfg.get("llms") or []),
                                          "known_llms": plain(cfg.get("known_llms")),
                                          "default_cost": plain(cfg.get("default_cost") or {}),
                                          "trust": plain(cfg.get("trust")),
                                          "task_calibration": plain(cfg.get("task_calibration")),
                                          "data_dir": _path(cfg, "data_dir"), "cache_dir": _path(cfg, "cache_dir")})


def _path(cfg: DictConfig, key: str) -> str | None:
    """``cfg.paths.<key>`` as a string (None when unset)."""
    value = (cfg.get("paths") or {}).get(key)
    return None if value in (None, "") else str(value)


def engine_for_settings(settings):
    """A worker's engine: the settings' model and LLMs, with their router and trust nodes built here."""
    from assessors.serving.engine import engine_from_settings

    engine = engine_from_settings(settings, router=built(settings.router), trust=built(settings.trust))
    engine.task_calibration = built(settings.task_calibration)  # POST /v1/tasks/calibrate's (None: defaults)
    return engine


def app_from_env():
    """App factory of the uvicorn worker processes (``server.workers > 1``): the settings passed in
    the environment, the engine from :func:`engine_for_settings`."""
    from assessors.serving.app import app_from_env as serving_app

    return serving_app(engine_factory=engine_for_settings)


def run(cfg: DictConfig, model=None) -> dict:
    """Start the HTTP server (uvicorn) with the configured model, router and LLMs."""
    import uvicorn

    from assessors.serving.app import SETTINGS_ENV, create_app

    from assessors.serving.heap import limit_kernel_cache

    settings = server_settings(cfg)
    # before anything encodes (calibration below, the warm-up); worker processes inherit it
    limit_kernel_cache(settings.batching.kernel_cache)
    options = dict(host=settings.host, port=settings.port, log_level=settings.log_level, timeout_keep_alive=5,
                   timeout_graceful_shutdown=10)
    if settings.workers > 1:
        # each worker process loads the model and registers the configured LLMs itself (see app_from_env)
        if model is not None or not cfg.model_uri:
            raise ConfigError("server.workers > 1 needs model_uri: every worker process loads the model from it")
        if cfg.get("calibration") and cfg.calibration.get("data") is not None:
            engine = engine_from_cfg(cfg)
            calibrate(cfg, engine)  # calibrate once here; the workers get the tuned knob
            settings.router = {**(settings.router or {}), engine.router.knob: float(engine.router.knob_value)}
        os.environ[SETTINGS_ENV] = settings.model_dump_json()
        log.info("serving on http://%s:%d with %d worker processes (OpenAPI at /docs)", settings.host, settings.port,
                 settings.workers)
        uvicorn.run("assessors.tasks.serve:app_from_env", factory=True, workers=settings.workers, **options)
        return {}
    engine = engine_from_cfg(cfg, model, precision=settings.precision)
    engine.task_calibration = built(settings.task_calibration)
    calibrate(cfg, engine)
    app = create_app(settings, engine=engine)
    log.info("serving %d LLMs on http://%s:%d (OpenAPI at /docs)", len(engine.registry), settings.host, settings.port)
    uvicorn.run(app, **options)
    return {}
