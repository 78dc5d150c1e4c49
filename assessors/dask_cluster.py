"""A Dask client on a running scheduler, or on a loopback LocalCluster started and stopped for one call."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator


@contextmanager
def dask_client(address: str | None, n_workers: int, threads_per_worker: int = 1, **cluster_kwargs) -> Iterator:
    """Yield a ``distributed.Client``; close it (and the cluster it started) on exit.

    Parameters
    ----------
    address : str or None
        Scheduler address (``tcp://host:8786``). None starts a LocalCluster of worker processes on
        127.0.0.1 (dashboard on a free port, so parallel jobs do not collide) for this block only.
    n_workers, threads_per_worker : int
        LocalCluster shape (ignored with ``address``).
    **cluster_kwargs
        More LocalCluster options, e.g. ``memory_limit`` (ignored with ``address``).
    """
    from distributed import Client, LocalCluster

    cluster = None
    if address:
        client = Client(address, timeout="30s")
    else:
        cluster = LocalCluster(n_workers=n_workers, threads_per_worker=threads_per_worker, processes=True,
                               host="127.0.0.1", dashboard_address=":0", **cluster_kwargs)
        try:
            client = Client(cluster)
        except BaseException:
            cluster.close()
            raise
    try:
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
