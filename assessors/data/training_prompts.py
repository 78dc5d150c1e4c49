"""Where a model's training prompts came from, so that onboarding can ask them again.

A loader that reads prompt files in the format of :func:`~assessors.data.prompts.read_prompt_files`
(ids named as that reader names them) lists them in ``Results.meta["prompt_files"]``:
``{subgroup: path relative to the data dir}`` (e.g. ``bbh_navigate ->
open_llm_leaderboard_v2/prompts/bbh_navigate_prompts.csv``). ``train.py`` stores a small record with
the model (:func:`training_prompts_record`): the relative files that hold its training prompts and
their instance ids, never texts or absolute paths. Onboarding (``predict.py mode=onboard``, the
server's ``server.onboarding.pool: training``) reads them back from the data dir
(:func:`read_training_prompts`): ``paths.data_dir`` / ``ASSESSORS_DATA_DIR``, else the download cache
the loaders fill.

The files are read by the reader their format calls for: prompt tables (``open_llm_leaderboard_v2``'s
``prompts/<subtask>_prompts.csv``) or OpenAI evals logs (``openai_evals/<dataset>/<model>.jsonl``, read as
the ``openai_evals`` loader reads them). Data whose files cannot grade a new LLM's answers (no gold
answer: ``routerbench``) says why in ``Results.meta["no_prompt_pool"]``; the model then records that
reason and no files (:func:`no_pool_reason`), and onboarding asks for prompt files naming it.
"""
from __future__ import annotations

import logging
import os
from pathlib import Path, PurePosixPath
from typing import Iterable, Sequence

import pandas as pd

from assessors.data.download import default_cache_dir
from assessors.data.prompts import read_prompt_files
from assessors.data.results import Results
from assessors.errors import ConfigError, DataError

log = logging.getLogger(__name__)

#: ``Results.meta`` key of ``{subgroup: prompt file relative to the data dir}``.
PROMPT_FILES = "prompt_files"
#: ``Results.meta`` key of why the data's files offer no pool (e.g. no gold answer to grade by).
NO_POOL = "no_prompt_pool"
#: Version of the record stored with a model (``AssessorModel.training_prompts``).
RECORD_VERSION = 1
_UNSET = (None, "", "None", "null")


def training_prompts_record(results: Results, ids: Sequence[str]) -> dict | None:
    """What a model stores about its training prompts ``ids``: relative prompt files and ids.

    Parameters
    ----------
    results : Results
        The training data; its ``meta["prompt_files"]`` maps subgroups to relative prompt files.
    ids : sequence of str, length n_train
        The training instance ids.

    Returns
    -------
    dict or None
        ``{"version", "data", "files", "n_ids", "n_without_file"}``. ``files`` lists, in first-use
        order, ``{"path", "prefix", "ids"}``: a prompt file (relative POSIX path), and the training
        ids in it as ``prefix + id`` (the ids' common ``<subgroup>/`` part is stored once:
        :func:`training_ids` joins them). ``n_without_file`` counts training ids in no prompt file.
        None when the data lists no prompt files (or none of ``ids`` is in one): the model then
        carries no default pool. Data that says why it has none (``meta["no_prompt_pool"]``) gets a
        record with no files and that reason as ``no_pool``, for the errors (:func:`no_pool_reason`).
    """
    files = {str(k): str(v) for k, v in (results.meta.get(PROMPT_FILES) or {}).items()}
    bad = [v for v in files.values() if Path(v).is_absolute() or ".." in PurePosixPath(v).parts]
    if bad:
        raise DataError(f"{results.name}: meta['{PROMPT_FILES}'] must hold paths relative to the data dir, got {bad[:2]}")
    sub = results.instances.loc[list(ids), "subgroup"].astype(str)
    has = sub.isin(list(files)).to_numpy()
    if not files and results.meta.get(NO_POOL):
        return {"version": RECORD_VERSION, "data": results.name, "files": [], "n_ids": 0,
                "n_without_file": len(sub), "no_pool": str(results.meta[NO_POOL])}
    if not files or not has.any():
        return None
    groups = [(files[g], [str(i) for i in sub.index[has & (sub == g).to_numpy()]]) for g in dict.fromkeys(sub[has])]
    return {"version": RECORD_VERSION, "data": results.name, "files": [_group(path, g) for path, g in groups],
            "n_ids": int(has.sum()), "n_without_file": int((~has).sum())}


def _group(path: str, ids: list[str]) -> dict:
    """One file's entry: its ids' common part up to a ``/`` stored once as ``prefix``."""
    common = os.path.commonprefix(ids)
    prefix = common[:common.rfind("/") + 1]
    return {"path": path, "prefix": prefix, "ids": [i[len(prefix):] for i in ids]}


def no_pool_reason(record: dict | None) -> str | None:
    """Why a model's ``training_prompts`` record offers no pool, or None when it lists prompt files.

    Returns
    -------
    str or None
        For a model without the record: trained before it existed or on data without prompt files;
        for data that said why (``no_pool``): ``"<data>: <reason>"``.
    """
    if not record:
        return "trained before they were recorded, or on data without prompt files"
    if record.get("files"):
        return None
    return f"{record.get('data')}: {record.get('no_pool') or 'the data lists no prompt files'}"


def training_files(record: dict) -> list[str]:
    """The record's prompt files, relative to the data dir."""
    return [f["path"] for f in record["files"]]


def training_ids(record: dict) -> list[str]:
    """The record's training instance ids, file by file."""
    return [f["prefix"] + i for f in record["files"] for i in f["ids"]]


def _folder(name: str, data_dir, cache_dir) -> Path | None:
    """Data set ``name``'s folder, found as the loaders find it (:func:`~assessors.data.download.locate`:
    ``data_dir``, else ``$ASSESSORS_DATA_DIR``, else a complete download cache; never downloading), or None."""
    from assessors.data.download import locate
    from assessors.errors import OfflineError

    try:
        return locate(name, None if data_dir in _UNSET else data_dir, cache_dir, download=False)
    except (DataError, OfflineError):
        return None


def _found_files(files: list[str], data_dir, cache_dir) -> dict[str, Path | None]:
    """Each relative file (``<data set>/<path in it>``) under its data set's folder, or None where absent."""
    parts = {rel: PurePosixPath(rel).parts for rel in files}
    folders = {p[0]: _folder(p[0], data_dir, cache_dir) for p in parts.values()}  # each data set located once
    found = {}
    for rel, (name, *rest) in parts.items():
        path = None if folders[name] is None else folders[name].joinpath(*rest)
        found[rel] = path if path is not None and path.is_file() else None
    return found


def resolve_training_files(record: dict, data_dir=None, cache_dir=None, instead: str = "") -> list[Path]:
    """The record's prompt files, found where the loaders find their data (:func:`_folder`).

    Raises
    ------
    DataError
        A file is not found: names the files, where they were looked for, and the fix
        (``ASSESSORS_DATA_DIR``, or ``instead``: the option that names prompt files).
    """
    found = _found_files(training_files(record), data_dir, cache_dir)
    missing = [rel for rel, p in found.items() if p is None]
    if missing:
        data = data_dir if data_dir not in _UNSET else os.environ.get("ASSESSORS_DATA_DIR")
        unset = not data
        where = ([] if unset else [str(data)]) + [str(cache_dir if cache_dir not in _UNSET else default_cache_dir())]
        why = ("no data dir is set (paths.data_dir / ASSESSORS_DATA_DIR) and the download cache does not hold them"
               if unset else "they are not in the data dir")
        raise DataError(f"the model's training prompts ({record.get('n_ids')} prompts of {record.get('data')}) "
                        f"are read from its prompt files, but {len(missing)} of {len(found)} are missing, e.g. "
                        f"{missing[0]} (looked under {', '.join(where)}): {why}. Set ASSESSORS_DATA_DIR "
                        f"(or paths.data_dir=...) to the data the model was trained on"
                        + (f", or {instead}" if instead else ""))
    return [found[rel] for rel in training_files(record)]


def read_training_prompts(record: dict, data_dir=None, cache_dir=None, ids: Iterable[str] | None = None,
                          required: Sequence[str] = ("target",), instead: str = "") -> tuple[pd.DataFrame, list[str]]:
    """Read a model's training prompts back from the data dir.

    Parameters
    ----------
    record : dict
        The model's ``training_prompts`` (:func:`training_prompts_record`).
    data_dir, cache_dir : path, optional
        Where to look (see :func:`_folder`).
    ids : iterable of str, optional
        Keep these instance ids (default: the record's training ids).
    required : sequence of str
        Columns the files must have besides ``instance_id`` and ``prompt`` (``target`` for grading).
    instead : str
        The other way to name prompt files, for the errors (e.g. ``"pass onboard.prompts=[...]"``).

    Returns
    -------
    prompts : pandas.DataFrame of shape (n, ...)
        ``instance_id, prompt, target, subgroup`` as :func:`read_prompt_files` returns them.
    files : list of str
        The files read.

    Raises
    ------
    ConfigError
        The record lists no prompt files (:func:`no_pool_reason`).
    DataError
        A file is missing (:func:`resolve_training_files`), or none of the ids is in the files.
    """
    why = no_pool_reason(record)
    if why:
        raise ConfigError(f"the model records no training prompts ({why})" + (f"; {instead}" if instead else ""))
    files = [str(f) for f in resolve_training_files(record, data_dir, cache_dir, instead)]
    want = set(training_ids(record) if ids is None else ids)
    df = read_prompt_files(files, ids=want, required=required)
    if df.empty:
        raise DataError(f"none of the model's {len(want)} training prompt ids occur in {files}: the data dir holds "
                        "other data than the model was trained on. Set ASSESSORS_DATA_DIR to that data"
                        + (f", or {instead}" if instead else ""))
    lost = len(want) - df["instance_id"].nunique()
    if lost and ids is None:
        log.warning("%d of the model's %d training prompts are no longer in %d prompt file(s); using the %d found",
                    lost, len(want), len(files), len(df))
    return df, files
