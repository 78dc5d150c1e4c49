"""Hydra launcher on Dask: each sweep job is one ``distributed`` task.

A thin adapter, shaped like Hydra's joblib launcher (whose ``execute_job`` runs each job here
too): it connects a ``distributed.Client`` to the scheduler at ``address``, or starts a
``LocalCluster`` on loopback when there is none, submits one task per job, and gathers the
``JobReturn`` objects. Scheduling and worker restarts are Dask's: a job whose worker dies is
re-run on another one (up to ``distributed.scheduler.allowed-failures`` times); a job that fails
comes back as a failed ``JobReturn``, as with every Hydra launcher; a job that finished before is
skipped by the task itself (``assessors.grid.resume``).
"""

import logging
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

from hydra.core.config_store import ConfigStore
from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, configure_log, filter_overrides, setup_globals
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig

from assessors.dask_cluster import dask_client

log = logging.getLogger(__name__)


@dataclass
class DaskLauncherConf:
    _target_: str = "hydra_plugins.assessors_dask_launcher.dask_launcher.DaskLauncher"
    # scheduler address (tcp://host:8786); null starts a LocalCluster for the sweep
    address: Optional[str] = None
    # LocalCluster only: worker processes, threads each (1: one job per worker at a time), memory cap
    n_workers: int = 2
    threads_per_worker: int = 1
    memory_limit: str = "auto"


ConfigStore.instance().store(group="hydra/launcher", name="dask", node=DaskLauncherConf,
                             provider="assessors_dask_launcher")


class DaskLauncher(Launcher):
    def __init__(self, address: Optional[str] = None, n_workers: int = 2, threads_per_worker: int = 1,
                 memory_limit: str = "auto") -> None:
        self.address = address
        self.n_workers = n_workers
        self.threads_per_worker = threads_per_worker
        self.memory_limit = memory_limit
        self.config: Optional[DictConfig] = None
        self.task_function: Optional[TaskFunction] = None
        self.hydra_context: Optional[HydraContext] = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.config = config
        self.task_function = task_function
        self.hydra_context = hydra_context

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        from distributed import as_completed
        from hydra_plugins.hydra_joblib_launcher._core import execute_job

        setup_globals()
        assert self.config is not None and self.task_function is not None and self.hydra_context is not None
        configure_log(self.config.hydra.hydra_logging, self.config.hydra.verbose)
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        if self.address:
            log.info("Dask: connecting to the scheduler at %s", self.address)
        # without an address: loopback only, any free port, a machine-local cluster for this sweep
        with dask_client(self.address, self.n_workers, self.threads_per_worker,
                         memory_limit=self.memory_limit) as client:
            log.info("Dask launcher: %d jobs on %s (%d workers)", len(job_overrides),
                     self.address or "a LocalCluster", len(client.scheduler_info()["workers"]))
            for idx, overrides in enumerate(job_overrides):
                log.info("\t#%d : %s", initial_job_idx + idx, " ".join(filter_overrides(overrides)))
            state: Any = Singleton.get_state()
            futures = [client.submit(execute_job, initial_job_idx + idx, list(overrides), self.hydra_context,
                                     self.config, self.task_function, state, pure=False,
                                     key=f"hydra-job-{initial_job_idx + idx}-{uuid.uuid4().hex[:8]}")
                       for idx, overrides in enumerate(job_overrides)]
            for done, fut in enumerate(as_completed(futures), 1):
                log.info("Dask launcher: %d/%d jobs done (%s)", done, len(futures), fut.status)
            runs = client.gather(futures)
        assert all(isinstance(r, JobReturn) for r in runs)
        return runs
