"""Commands a task prints for the user to run next (e.g. scoring prompts with the model just logged)."""
from __future__ import annotations

import shlex
from pathlib import Path
from typing import Sequence

import pandas as pd


def entry_script(name: str) -> str:
    """How to call the entry point ``name`` (``predict.py``) that sits beside this run's config.

    Hydra records where the primary config came from (``hydra.runtime.config_sources``); the
    entry points live next to that ``conf/`` folder. Outside a Hydra run, or when the script is
    not there (the package installed without the repository's entry points), the bare name.
    """
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return name
    for source in HydraConfig.get().runtime.config_sources:
        if source.provider == "main" and source.schema == "file":
            script = Path(source.path).resolve().parent / name
            if script.exists() and script.parent != Path.cwd().resolve():
                return str(script)
    return name


def example_prompts(ids: Sequence[str], prompts: Sequence[str], outputs: str, run_id: str | None) -> Path:
    """Write held-out prompts (``id, prompt``) for the printed ``predict.py`` command."""
    from assessors.io import atomic_write

    df = pd.DataFrame({"id": list(ids), "prompt": list(prompts)})
    path = Path(outputs).resolve() / "predict" / f"prompts_{run_id or 'example'}.csv"
    return atomic_write(path, lambda tmp: df.to_csv(tmp, index=False))


def predict_command(tracking, outputs: str, model_uri: str, prompts: Path) -> str:
    """The exact ``predict.py`` command that scores ``prompts`` with the model logged at ``model_uri``.

    It names the MLflow store explicitly (the same absolute path or server that ``tracking``
    gave train.py), so it works from any working directory.
    """
    args = ["mode=score", f"model_uri={model_uri}", f"prompts={prompts}", "known_llms=all"]
    if tracking.get("tracking_uri"):
        args.append(f"tracking.tracking_uri={tracking.tracking_uri}")
    else:
        out = Path(outputs).resolve()
        args.append(f"paths.outputs={out}")
        db = Path(tracking.db_path).resolve()
        if db != out / "mlflow.db":
            args.append(f"tracking.db_path={db}")
    return " ".join(["python", shlex.quote(entry_script("predict.py"))] + [shlex.quote(a) for a in args])
