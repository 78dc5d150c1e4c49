"""Hydra launcher that runs sweep jobs as Dask tasks (``hydra/launcher=dask_local``)."""
