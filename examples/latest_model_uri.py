"""Print the model URI of the newest finished ``train.py`` run that logged a model.

    export ASSESSORS_MODEL_URI=$(python examples/latest_model_uri.py)

Reads the embedded MLflow store (``outputs/mlflow.db``, or ``--tracking-uri``), finds the model
that ``train.py`` logged (its run's ``model_uri`` tag) and prints the local directory holding its
``MLmodel`` file, which ``predict.py`` loads with no tracking settings; with ``--uri``, or when the
artifacts are not on this machine, it prints the MLflow URI (``models:/<model id>``) instead.
"""
from __future__ import annotations

import argparse
from pathlib import Path
from urllib.parse import urlparse


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tracking-uri", default=None, help="default: sqlite:///<cwd>/outputs/mlflow.db")
    ap.add_argument("--uri", action="store_true", help="print the MLflow model URI, not the local directory")
    args = ap.parse_args(argv)
    import mlflow

    uri = args.tracking_uri
    if uri is None:
        db = Path("outputs/mlflow.db")
        if not db.exists():
            raise SystemExit(f"{db} not found: run `python train.py` first (from this directory)")
        uri = f"sqlite:///{db.resolve()}"
    mlflow.set_tracking_uri(uri)
    runs = mlflow.search_runs(search_all_experiments=True, filter_string="attributes.status = 'FINISHED'",
                              order_by=["attributes.start_time DESC"])
    col = "tags.model_uri"
    if col not in runs.columns or runs[col].isna().all():
        raise SystemExit(f"no finished run with a logged model in {uri}: run `python train.py` first")
    model_uri = runs[col].dropna().iloc[0]
    if args.uri or not model_uri.startswith("models:/"):
        print(model_uri)
        return
    location = mlflow.get_logged_model(model_uri.removeprefix("models:/")).artifact_location
    local = Path(urlparse(location).path) if location.startswith("file:") else None
    print(local if local is not None and (local / "MLmodel").exists() else model_uri)


if __name__ == "__main__":
    main()
