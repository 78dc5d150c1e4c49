"""One OpenAI ``evals`` run log read back as a prompt table, as the ``openai_evals`` loader names it.

What lets a model trained on ``data=openai_evals`` ask its training prompts again
(:mod:`assessors.data.training_prompts`): :func:`is_evals_log` recognises a log by its first record,
:func:`read_evals_prompts` reads it with the loader's own ids, prompt rendering and targets.
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from assessors.data.loaders.openai_evals import instance_id, read_evals_log


def is_evals_log(path: str | Path) -> bool:
    """True when the file's first record is an evals ``spec`` record or a ``sampling``/``match`` event."""
    with open(path, encoding="utf-8", errors="replace") as f:
        first = next((line for line in f if line.strip()), "")
    try:
        rec = json.loads(first)
    except json.JSONDecodeError:
        return False
    event = isinstance(rec, dict) and "sample_id" in rec and rec.get("type") in ("sampling", "match")
    return isinstance(rec, dict) and ("spec" in rec or event)


def read_evals_prompts(path: str | Path) -> pd.DataFrame:
    """One evals log ``<dataset>/<model>.jsonl`` as a prompt table, named as
    :func:`~assessors.data.loaders.openai_evals.load_openai_evals` names it.

    Returns
    -------
    pandas.DataFrame of shape (n_samples, 4)
        ``instance_id, prompt, target, subgroup``: the rendered prompt, ``match.data.expected`` and the
        dataset (the log's folder name).
    """
    path = Path(path)
    frame, ds = read_evals_log(path), path.parent.name
    return pd.DataFrame({"instance_id": [instance_id(ds, s) for s in frame["sample_id"]],
                         "prompt": frame["prompt"].to_numpy(dtype=object),
                         "target": frame["expected"].to_numpy(dtype=object), "subgroup": ds})
