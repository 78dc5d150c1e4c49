"""Tiny grid configs (3 BBH subtasks, success-pattern features, one logistic regression) and a Dask
cluster started by Dask's own command line."""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from tests.processes import free_port

TINY = ["experiment=paper_in_distribution", "data.subtasks=[bbh_navigate,bbh_snarks,bbh_web_of_lies]",
        "features=success_pattern", "classifier=logreg_l2", "classifier.param_grid.C=[1.0]",
        "assessor.instance_features=embedding", "~specific.classifiers.xgboost",
        "specific.classifiers.logreg_l2.param_grid.C=[1.0]", "specific.cv=2"]


@pytest.fixture
def tiny(compose):
    def _tiny(*extra):
        return compose(TINY + list(extra))

    return _tiny


@contextlib.contextmanager
def dask_cli_cluster(cwd: Path, env: dict, n_workers: int = 2) -> Iterator[tuple[str, list[subprocess.Popen]]]:
    """A scheduler and ``n_workers`` one-thread workers on loopback, started as separate process groups.

    Yields the scheduler address and the list of processes; a process the caller appends to the list
    (the sweep) is ended with them: each group gets SIGTERM on exit.
    """
    address = f"tcp://127.0.0.1:{free_port()}"
    quiet = dict(cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    procs = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port",
                               address.rsplit(":", 1)[1], "--no-dashboard"], **quiet)]
    try:
        procs.append(subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address, "--nworkers",
                                       str(n_workers), "--nthreads", "1", "--no-dashboard", "--host", "127.0.0.1"],
                                      **quiet))
        yield address, procs
    finally:
        for p in procs:
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGTERM)
                p.wait(60)
