"""``python tests/faults/runner.py [train.py overrides]``: train.py with one injected SIGKILL.

``FAULT=<point>:<n>`` makes this process SIGKILL itself at the n-th call of the point:

* ``embed``: the featurizer's computation of a cache shard (shards 1..n-1 are on disk);
* ``fit``: an XGBoost fit (inside the generic assessor's candidate grid);
* ``mlflow``: an MLflow artifact upload (the run's tables and plots);
* ``model``: the pickling of the pyfunc model inside ``mlflow.pyfunc.log_model``.

``FAULT_SHARD_SIZE`` sets the embedding cache's shard size. Without ``FAULT`` it is train.py.
"""
from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def kill_at(owner, attr: str, n: int) -> None:
    """Replace ``owner.attr`` by a wrapper that SIGKILLs the process at its n-th call."""
    original = getattr(owner, attr)
    calls = [0]

    def wrapper(*args, **kwargs):
        calls[0] += 1
        if calls[0] >= n:
            sys.stdout.flush()
            sys.stderr.flush()
            os.kill(os.getpid(), signal.SIGKILL)
        return original(*args, **kwargs)

    setattr(owner, attr, wrapper)


def install(fault: str) -> None:
    point, n = fault.split(":")
    n = int(n)
    if point == "embed":
        from assessors.features.openai import OpenAIEmbeddingFeaturizer

        kill_at(OpenAIEmbeddingFeaturizer, "_transform", n)
    elif point == "fit":
        import xgboost

        kill_at(xgboost.XGBClassifier, "fit", n)
    elif point == "mlflow":
        import mlflow

        kill_at(mlflow, "log_artifact", n)
    elif point == "model":
        import cloudpickle

        kill_at(cloudpickle, "dump", n)
    else:
        raise SystemExit(f"unknown fault point {point!r}")


def main() -> None:
    sys.path.insert(0, str(ROOT))
    if os.environ.get("FAULT_SHARD_SIZE"):
        import assessors.features.cache as cache

        cache.SHARD_SIZE = int(os.environ["FAULT_SHARD_SIZE"])
    if os.environ.get("FAULT"):
        install(os.environ["FAULT"])
    import runpy

    os.chdir(ROOT)
    sys.argv = [str(ROOT / "train.py"), *sys.argv[1:]]
    runpy.run_path(str(ROOT / "train.py"), run_name="__main__")  # as a script: Hydra finds conf/ beside it


if __name__ == "__main__":
    main()
