"""Plots, tables and reports."""


def report_run(*args, **kwargs):
    """Log a training run's metrics, tables, plots and model (see :mod:`run_report`)."""
    from assessors.reporting.run_report import report_run as _report_run

    return _report_run(*args, **kwargs)
