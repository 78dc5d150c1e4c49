"""The paper's full grid as Hydra sweeps: one job per combination, a report from the MLflow runs."""


def run_grid(cfg):
    """Run one grid combination (see :mod:`assessors.grid.job`)."""
    from assessors.grid.job import run_grid as _run

    return _run(cfg)
