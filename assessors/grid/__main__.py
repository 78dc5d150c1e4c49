"""Rebuild a grid report from MLflow: ``python -m assessors.grid --experiment NAME [--db outputs/mlflow.db]``."""
from __future__ import annotations

import argparse

from assessors.grid.report import build_report
from assessors.tracking import MlflowTracker


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--experiment", required=True, help="MLflow experiment of the sweep (the preset's experiment_name)")
    ap.add_argument("--db", default="outputs/mlflow.db", help="embedded SQLite store")
    ap.add_argument("--artifacts", default="outputs/mlartifacts")
    ap.add_argument("--tracking-uri", default=None, help="an MLflow server instead of the SQLite store")
    ap.add_argument("--out", default=None, help="report folder (default outputs/reports/<experiment>)")
    ap.add_argument("--no-baselines", action="store_true", help="skip refitting the specific assessor and baselines")
    a = ap.parse_args(argv)
    tracker = MlflowTracker(a.tracking_uri, a.db, a.artifacts, a.experiment, log_model=False)
    print(build_report(tracker, a.out or f"outputs/reports/{a.experiment}", baselines=not a.no_baselines))


if __name__ == "__main__":
    main()
