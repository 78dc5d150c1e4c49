"""Loaders for OpenAI ``evals`` run logs and for the KindsOfReasoning final table.

OpenAI evals logs (``<root>/openai_evals/<dataset>/<model>.jsonl``, KindsOfReasoning's raw results):
the first line is a ``spec`` record, then each sample has a ``sampling`` event (``data.prompt``,
``data.sampled``) and a ``match`` event (``data.correct``, ``data.expected``) with the same
``sample_id``. Other records (``final_report``, ...) are ignored.

Prompt rendering
    Chat prompts (a list of ``{"role", "content"}`` messages) are rendered one message per line as
    ``"<role>: <content>"``, e.g. ``"system: Answer with 'Yes' or 'No'.\\nuser: Is it ...?"``.
    Completion models log a pre-rendered string instead; the instance prompt is the chat rendering
    whenever any model has one (the same item must have one text for every LLM), else the string.

Instance ids are the ``sample_id`` (``causal_judgment.test.57``), prefixed with ``<dataset>/``
when the sample id does not already start with the dataset name. ``subgroup`` = dataset,
``target`` = ``match.data.expected``, LLM = file stem. Responses (``data.sampled``) go to
``Results.responses``.

Prompt files
    ``Results.meta["prompt_files"]`` names, per dataset, the one log whose prompts are the instance texts
    (``{dataset: "openai_evals/<dataset>/<model>.jsonl"}``, relative to the data dir; a dataset whose
    texts came from several logs is left out).
    :func:`~assessors.data.loaders.evals_prompts.read_evals_prompts` reads a log back as a prompt
    table with these ids, texts and targets, so a model's training prompts can be asked again
    (:mod:`assessors.data.training_prompts`).
"""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from assessors.data.columns import require_columns
from assessors.data.download import locate
from assessors.data.loaders._common import bool_success, check_utf8, read_csv, select
from assessors.data.results import Results
from assessors.errors import DataError

log = logging.getLogger("assessors.data")

NAME = "openai_evals"
KOR_SPLIT_COLUMNS = ("Random_split", "OOD_1_split", "OOD_2_split", "OOD_3_split", "OOD_4_split")


def render_messages(prompt) -> str:
    """Chat messages -> ``"role: content"`` lines; a string prompt is returned unchanged."""
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list):
        return "\n".join(f"{m.get('role', 'user')}: {m.get('content', '')}" for m in prompt)
    raise TypeError(f"unexpected prompt type {type(prompt).__name__}")


def _text(value) -> str | float:
    if value is None:
        return np.nan
    if isinstance(value, list):
        return value[0] if len(value) == 1 and isinstance(value[0], str) else json.dumps(value)
    return value if isinstance(value, str) else json.dumps(value)


def _read_events(path: Path, sampling: dict, matches: dict) -> None:
    """Fill ``sampling`` and ``matches`` (sample_id -> (line, data)) from one evals log."""
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                raise DataError(f"{path}: line {n} is not valid JSON (truncated or corrupt file?): {e}") from None
            kind = rec.get("type")
            if kind not in ("sampling", "match"):
                continue
            sid = rec.get("sample_id")
            data = rec.get("data") or {}
            store = sampling if kind == "sampling" else matches
            if sid in store:
                raise DataError(f"{path}: line {n}: duplicated {kind} event for sample_id {sid!r}")
            store[sid] = (n, data)


def instance_id(dataset: str, sample_id) -> str:
    """The loader's instance id: ``sample_id``, prefixed ``<dataset>/`` unless it starts with ``<dataset>.``."""
    sid = str(sample_id)
    return sid if sid.startswith(f"{dataset}.") else f"{dataset}/{sid}"


def read_evals_log(path: Path) -> pd.DataFrame:
    """Pair sampling and match events of one log: columns sample_id, prompt, is_chat, response, correct, expected."""
    sampling, matches = {}, {}
    try:
        _read_events(path, sampling, matches)
    except UnicodeDecodeError:
        check_utf8(path)  # names the line and byte
        raise
    if not matches:
        raise DataError(f"{path}: no 'match' events (empty, truncated or not an evals log)")
    only_s, only_m = set(sampling) - set(matches), set(matches) - set(sampling)
    if only_s or only_m:
        log.warning("%s: %d sampling events without a match and %d matches without a sampling event are not "
                    "loaded", path, len(only_s), len(only_m))
    rows = []
    for sid, (n, m) in matches.items():
        if sid not in sampling:
            continue
        s = sampling[sid][1]
        rows.append({"sample_id": sid, "prompt": render_messages(s.get("prompt", "")),
                     "is_chat": isinstance(s.get("prompt"), list), "response": _text(s.get("sampled")),
                     "correct": bool_success(m.get("correct"), f"{path}: line {n}, field data.correct"),
                     "expected": _text(m.get("expected"))})
    return pd.DataFrame(rows)


def load_openai_evals(
    root: str | Path | None = None,
    cache_dir: str | Path | None = None,
    datasets: Sequence[str] | str | None = None,
    models: Sequence[str] | str | None = None,
    responses: bool = True,
    download: bool = True,
) -> Results:
    """Load OpenAI evals logs ``<dataset>/<model>.jsonl`` into a Results.

    Parameters
    ----------
    root, cache_dir, download
        Data location, see :func:`assessors.data.download.locate`.
    datasets, models : sequence of str or str, optional
        Glob patterns over dataset folder names and model file stems (None = all).
    responses : bool
        Keep the sampled answers as ``Results.responses``.

    Returns
    -------
    Results
        ``success`` of shape (n_models, n_samples), NaN where a model has no log for a dataset.
    """
    base = locate(NAME, root=root, cache_dir=cache_dir, download=download)
    ds_names = select(sorted(p.name for p in base.iterdir() if p.is_dir()), datasets, "dataset", base)
    files = {ds: {p.stem: p for p in sorted((base / ds).glob("*.jsonl"))} for ds in ds_names}
    llms = select(sorted(set().union(*(set(v) for v in files.values()))), models, "model", base)

    inst_rows: dict[str, dict] = {}
    cells: list[tuple] = []
    resp: list[tuple] | None = [] if responses else None
    n_conflict = 0
    for ds in ds_names:
        for llm in llms:
            if llm not in files[ds]:
                log.info("%s: no log for model %s (its cells are NaN)", base / ds, llm)
                continue
            n_conflict += _merge_log(read_evals_log(files[ds][llm]), ds, llm, inst_rows, cells, resp)
    if n_conflict:
        log.warning("%s: %d (model, sample) pairs had a chat prompt differing from the first one seen; "
                    "the first is used", base, n_conflict)
    instances = pd.DataFrame.from_dict(inst_rows, orient="index")
    prompt_files = _prompt_files(instances, ds_names)
    instances = instances.drop(columns=["is_chat", "text_from"])
    instances.index.name = "instance_id"
    long = pd.DataFrame(cells, columns=["llm", "instance_id", "success"])
    res = Results.from_long(long, instances=instances, name=NAME, source=str(base))
    res = res.subset(llms=[m for m in llms if m in res.llms])
    if responses:
        res.responses = pd.DataFrame(resp, columns=["llm", "instance_id", "response"])
    res.meta = {"datasets": ds_names, "root": str(base), "prompt_files": prompt_files}
    log.info("%s: loaded %d LLMs x %d instances from %d dataset(s)", NAME, *res.shape, len(ds_names))
    return res


def _prompt_files(instances: pd.DataFrame, ds_names: list[str]) -> dict[str, str]:
    """``{dataset: its log relative to the data dir}`` for the datasets whose instance texts all came from one
    log (that log reads back every text, :func:`read_evals_prompts`)."""
    files = {}
    for ds in ds_names:
        src = instances.loc[instances["subgroup"] == ds, "text_from"].unique()
        if len(src) == 1:
            files[ds] = f"{NAME}/{ds}/{src[0]}.jsonl"
        elif len(src) > 1:
            log.info("%s/%s: instance texts come from %d logs; the dataset lists no prompt file (no training-"
                     "prompt pool)", NAME, ds, len(src))
    return files


def _merge_log(frame: pd.DataFrame, ds: str, llm: str, inst_rows: dict[str, dict], cells: list,
               resp: list | None) -> int:
    """Add one model's log on one dataset: its instances (a chat prompt wins over a pre-rendered
    string; ``text_from`` names the log the text came from), its ``(llm, instance_id, correct)`` cells
    and, when ``resp`` is a list, its responses.

    Returns the number of chat prompts that differ from the one already recorded (the first is kept).
    """
    n_conflict = 0
    for r in frame.itertuples(index=False):
        iid = instance_id(ds, r.sample_id)
        cur = inst_rows.get(iid)
        if cur is None or (r.is_chat and not cur["is_chat"]):
            inst_rows[iid] = {"prompt": r.prompt, "is_chat": r.is_chat, "subgroup": ds, "target": r.expected,
                              "text_from": llm}
        elif r.is_chat and cur["prompt"] != r.prompt:
            n_conflict += 1
        cells.append((llm, iid, r.correct))
        if resp is not None:
            resp.append((llm, iid, r.response))
    return n_conflict


def load_kindsofreasoning_table(
    path: str | Path,
    datasets: Sequence[str] | str | None = None,
    models: Sequence[str] | str | None = None,
    responses: bool = True,
) -> Results:
    """Load KindsOfReasoning's final table (``KindsOfReasoning_with_llm_results.csv`` or ``.json`` lines).

    One row per prompt with columns ``prompt``, ``system_prompt``, ``dataset``, the split columns
    ``Random_split`` and ``OOD_1_split`` ... ``OOD_4_split`` (values ``train``/``validation``/
    ``test``), then ``Success_<llm>`` and ``Answer_<llm>`` per LLM.

    The instance prompt is rendered like a chat log: ``"system: <system_prompt>\\nuser: <prompt>"``
    (just ``prompt`` when there is no system prompt). Instance ids are ``"<dataset>/<k>"`` with ``k``
    the row's position within its dataset. Split columns and ``system_prompt`` are kept as instance
    columns (use :class:`~assessors.data.instance_splits.PredefinedSplit`); ``Answer_`` columns go
    to ``Results.responses``.
    """
    path = Path(path)
    table = _read_table(path)
    require_columns(table, ("prompt", "dataset"), path)
    succ_cols = [c for c in table.columns if c.startswith("Success_")]
    if not succ_cols:
        raise DataError(f"{path}: no Success_<llm> columns")
    llms = select([c[len("Success_"):] for c in succ_cols], models, "model", path)
    ds = select(list(dict.fromkeys(table["dataset"].astype(str))), datasets, "dataset", path)
    keep = table["dataset"].astype(str).isin(ds)
    if (~keep).any():
        log.info("%s: %d rows of unselected datasets not loaded", path.name, int((~keep).sum()))
    line = np.arange(len(table)) + 1  # 1-based record number after the header (prompts span several lines)
    table, line = table[keep.to_numpy()], line[keep.to_numpy()]
    k = table.groupby("dataset", sort=False).cumcount().astype(str)
    ids = (table["dataset"].astype(str) + "/" + k).tolist()
    res = Results(instances=_kor_instances(table, ids), llms=llms, success=_kor_success(table, llms, line, path),
                  name="kindsofreasoning", meta={"path": str(path), "datasets": ds})
    if responses:
        ans = [(llm, iid, a) for llm in llms if f"Answer_{llm}" in table.columns
               for iid, a in zip(ids, table[f"Answer_{llm}"].to_numpy(dtype=object))]
        res.responses = pd.DataFrame(ans, columns=["llm", "instance_id", "response"])
    log.info("kindsofreasoning: loaded %d LLMs x %d instances from %s", *res.shape, path.name)
    return res


def _kor_instances(table: pd.DataFrame, ids: list[str]) -> pd.DataFrame:
    """Instance table of the KindsOfReasoning rows: chat-rendered prompt, dataset, target, the
    ``system_prompt`` and split columns."""
    system = table["system_prompt"] if "system_prompt" in table.columns else pd.Series(np.nan, index=table.index)
    has_sys = system.notna() & (system.astype(str).str.len() > 0)
    user = table["prompt"].astype(str)
    prompt = np.where(has_sys, "system: " + system.astype(str) + "\nuser: " + user, user)
    instances = pd.DataFrame({"prompt": prompt, "subgroup": table["dataset"].astype(str).to_numpy(),
                              "target": table["target"].to_numpy() if "target" in table.columns else np.nan},
                             index=pd.Index(ids, name="instance_id"))
    for col in ("system_prompt", *[c for c in KOR_SPLIT_COLUMNS if c in table.columns]):
        if col in table.columns:
            instances[col] = table[col].to_numpy(dtype=object)
    return instances


def _kor_success(table: pd.DataFrame, llms: list[str], line: np.ndarray, path: Path) -> np.ndarray:
    """float32 (n_llms, n_rows) from the ``Success_<llm>`` columns; a bad cell names its record."""
    success = np.full((len(llms), len(table)), np.nan, dtype=np.float32)
    for i, llm in enumerate(llms):
        col = table[f"Success_{llm}"]
        for j, v in enumerate(col.to_numpy(dtype=object)):
            success[i, j] = bool_success(v, f"{path}: record {line[j]}, column 'Success_{llm}'")
    return success


def _read_table(path: Path) -> pd.DataFrame:
    if path.suffix.lower() == ".csv":
        return read_csv(path)
    try:
        # dtype=False: cells keep their JSON types (no "007" -> 7, no dates guessed from text)
        return pd.read_json(path, lines=True, dtype=False)
    except FileNotFoundError:
        raise DataError(f"{path}: file not found") from None
    except ValueError:
        try:  # the same records as one JSON array
            return pd.read_json(path, dtype=False)
        except ValueError as e:
            raise DataError(f"{path}: truncated or corrupt JSON lines file ({e})") from e
