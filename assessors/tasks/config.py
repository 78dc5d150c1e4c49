"""Config in, plain values and built objects out: what the tasks hand to the library below them.

Nothing below ``assessors/tasks/`` imports Hydra or OmegaConf (``tests/test_layering.py``): the tasks
read the composed config, convert nodes with :func:`plain`, build components with
``hydra.utils.instantiate`` and pass the results on. The helpers several tasks share for that are here.
"""
from __future__ import annotations

from typing import Any, Iterable

from hydra.utils import instantiate
from omegaconf import OmegaConf


def plain(node: Any, resolve: bool = True) -> Any:
    """A config node as plain Python containers (other values unchanged).

    ``resolve=False`` keeps interpolations such as ``${oc.env:MY_KEY}`` as text: what is logged or
    checked for literal secrets must not see the values they resolve to.
    """
    return OmegaConf.to_container(node, resolve=resolve) if OmegaConf.is_config(node) else node


def plain_part(cfg: Any, keys: Iterable[str]) -> dict[str, Any]:
    """``{key: plain(cfg[key])}`` for those of ``keys`` the config has (resolved)."""
    return {k: plain(cfg[k]) for k in keys if k in cfg}


def built(node: Any) -> Any:
    """``node`` instantiated when it names a ``_target_``; a plain copy of it otherwise (None stays None)."""
    node = plain(node)
    return instantiate(node) if isinstance(node, dict) and "_target_" in node else node


def sweep_jobs() -> int:
    """Processes a Hydra joblib sweep runs at once beside this one (its launcher's ``n_jobs``), else 1."""
    try:
        from hydra.core.hydra_config import HydraConfig
        from hydra.types import RunMode

        if HydraConfig.initialized():
            hc = HydraConfig.get()
            if hc.mode == RunMode.MULTIRUN:
                n = hc.launcher.get("n_jobs")
                return max(1, int(n)) if isinstance(n, int) and n > 0 else 1
    except Exception:  # a launcher without n_jobs
        pass
    return 1


def tracker_from_cfg(cfg):
    """Build the configured tracker (``cfg.tracking``), defaulting to in-memory."""
    from assessors.tracking import NullTracker

    if cfg is None or cfg.get("tracking") is None:
        return NullTracker()
    return instantiate(cfg.tracking)
