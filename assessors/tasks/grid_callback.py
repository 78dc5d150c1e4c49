"""Hydra callback of grid sweeps: clean stale runs at start, build the report at the end."""
from __future__ import annotations

import logging
from pathlib import Path

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

log = logging.getLogger(__name__)


class GridReportCallback(Callback):
    """``hydra.callbacks.grid_report`` in grid presets.

    Parameters
    ----------
    baselines : bool
        Refit the specific assessor and baselines for each split's winner.
    enabled : bool
        Set false to sweep without a report (``python train.py experiment=grid_report`` builds it later).
    """

    def __init__(self, baselines: bool = True, enabled: bool = True) -> None:
        self.baselines = baselines
        self.enabled = enabled

    def on_multirun_start(self, config: DictConfig, **kwargs) -> None:
        from assessors.grid.resume import end_stale_runs
        from assessors.tasks.config import tracker_from_cfg

        n = end_stale_runs(tracker_from_cfg(config))
        if n:
            log.warning("marked %d RUNNING runs of dead processes as KILLED", n)

    def on_multirun_end(self, config: DictConfig, **kwargs) -> None:
        if not self.enabled:
            return
        from assessors.grid.report import build_report
        from assessors.tasks.grid import winner_vs_baselines
        from assessors.tasks.config import tracker_from_cfg

        split = config.get("grid", {}).get("split_name")
        path = build_report(tracker_from_cfg(config), Path(config.hydra.sweep.dir) / "report",
                            baselines=winner_vs_baselines if self.baselines else None, splits=[split] if split else None)
        print(f"\nGrid report: {path}\n")
