"""Files that describe an LLM by graded answers on any prompts (its evidence), for ``predict.py``.

* ``answers``: a CSV (or JSON, or onboarding results directory; :func:`read_reference` reads it) of
  ``instance_id, success`` with success 0, 1 or missing, plus the prompt files whose ids it names
  (read by :func:`~assessors.data.prompts.read_prompt_files`, so ids are named as onboarding names
  them: ``<file stem>/<id>`` for files without a ``subgroup`` column);
* an adaptive onboarding directory (``predict.py mode=onboard``): its ``answers.csv`` and the
  candidate pool files recorded in its ``adaptive.json`` (only the ``pool_ids`` it records, when the
  pool was a part of the files), checked against the pool fingerprint pinned there.

Both give the answered prompts' text and answers; the caller featurizes the text with the model's
featurizer (the same path as the prompts it scores).
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from assessors.data.prompt_files import read_reference
from assessors.data.prompts import read_prompt_files
from assessors.errors import DataError

#: Adaptive onboarding's manifest and answers in its ``out_dir``.
ONBOARD_MANIFEST = "adaptive.json"
ANSWERS_FILE = "answers.csv"


def pool_fingerprint(df: pd.DataFrame) -> str:
    """Hash of a candidate pool's ids (the index), prompts and targets (order-independent)."""
    h = hashlib.sha256()
    for iid in sorted(df.index):
        h.update(json.dumps([iid, str(df.at[iid, "prompt"]), str(df.at[iid, "target"])]).encode())
    return h.hexdigest()[:16]


def read_answer_prompts(answers: str | os.PathLike, prompts: Sequence[str | os.PathLike]
                        ) -> tuple[list[str], list[str], np.ndarray]:
    """The answered prompts of ``answers`` looked up in the prompt files ``prompts``.

    Returns
    -------
    ids : list of str, length n
    texts : list of str, length n
        The prompts of those ids.
    y : ndarray of shape (n,)
        0, 1 or NaN (missing).

    Raises
    ------
    DataError
        Naming the file and the fix: an answer other than 0/1/missing, ids not in the prompt files,
        an id in several files, or no answers.
    """
    if isinstance(prompts, (str, os.PathLike)) or not prompts:
        raise DataError(f"{answers}: give the prompt files its ids name as a list (prompts: [file, ...])")
    pool = read_prompt_files([str(p) for p in prompts], required=())
    return answers_in_pool(answers, read_answers(answers), pool, [str(p) for p in prompts])


def read_answers(path: str | os.PathLike) -> dict:
    """``{instance id: success or None}`` of an answers file (the formats of :func:`read_reference`)."""
    if not Path(path).exists():
        raise DataError(f"{path}: answers file not found")
    try:
        return read_reference(path)
    except (ValueError, TypeError) as e:
        if isinstance(e, DataError):
            raise
        raise DataError(f"{path}: success must be 0, 1 or missing ({e})") from e


def answers_in_pool(source, answers: dict, pool: pd.DataFrame, files: Sequence[str]):
    """``(ids, texts, y)`` of the ``answers`` ({id: success}) looked up in ``pool`` (``instance_id, prompt``)."""
    if not answers:
        raise DataError(f"{source}: no answers")
    text = dict(zip(pool["instance_id"], pool["prompt"].astype(str)))
    ids = list(answers)
    unknown = [i for i in ids if i not in text]
    if unknown:
        raise DataError(f"{source}: {len(unknown)} of {len(ids)} answered ids are not in the prompt files {list(files)}, "
                        f"e.g. {unknown[:3]} (their ids look like {list(text)[:3]}); pass the files the answers were "
                        "made from (for onboarding output: the onboard.prompts files)")
    y = np.array([np.nan if v is None else v for v in answers.values()], dtype=np.float64)
    bad = np.isfinite(y) & (y != 0) & (y != 1) | np.isinf(y)
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        raise DataError(f"{source}: success must be 0, 1 or missing; id {ids[j]!r} has {y[j]!r}. Threshold graded "
                        "scores (e.g. success = score >= 0.5) before passing them")
    return ids, [text[i] for i in ids], y


def read_onboarded(out_dir: str | os.PathLike) -> tuple[list[str], list[str], np.ndarray, list[str]]:
    """``(ids, texts, y, pool files)`` of an adaptive onboarding directory (see the module docstring)."""
    out = Path(out_dir)
    manifest, answers = out / ONBOARD_MANIFEST, out / ANSWERS_FILE
    for f in (manifest, answers):
        if not f.exists():
            raise DataError(f"{out}: no {f.name}; pass the onboard.out_dir of an adaptive onboarding "
                            "(predict.py mode=onboard with assessor=latent)")
    try:
        state = json.loads(manifest.read_text())
        pinned = state["pinned"]
    except (json.JSONDecodeError, KeyError, TypeError) as e:
        raise DataError(f"{manifest}: not an adaptive onboarding manifest ({e})") from e
    files = state.get("pool_files")
    if not files:
        raise DataError(f"{manifest} records no candidate pool files (an onboarding from before they were recorded); "
                        f"pass answers: {answers} with prompts: [the onboard.prompts files] instead")
    pool = read_prompt_files(files)
    if state.get("pool_ids") is not None:  # the pool was a part of its files (e.g. the model's training prompts)
        pool = pool[pool["instance_id"].isin(set(state["pool_ids"]))]
    fp = pool_fingerprint(pool.set_index("instance_id"))
    if fp != pinned.get("pool"):
        raise DataError(f"{out}: the pool files {files} changed since the onboarding (pool fingerprint {fp}, onboarding "
                        f"had {pinned.get('pool')}), so its answers may name other prompts. If the answered prompts did "
                        f"not change, pass answers: {answers} with prompts: [files] instead")
    return (*answers_in_pool(answers, read_answers(answers), pool, files), list(files))
