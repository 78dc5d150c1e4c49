"""Loader for the Open LLM Leaderboard v2 per-item results shipped by PredictaBoard.

Files (see ``datasets/open_llm_leaderboard_v2.md``)::

    <root>/open_llm_leaderboard_v2/results/<Benchmark>__<subtask>_results.csv   # model,timestamp,<item id>...
    <root>/open_llm_leaderboard_v2/results/MMLU-Pro_results.csv                 # no subtask, no prompts
    <root>/open_llm_leaderboard_v2/prompts/<bbh|musr>_<subtask>_prompts.csv     # id,prompt,target

Subtask names are ``<prefix>_<subtask>`` with prefix ``bbh`` (Big-Bench-Hard), ``musr`` (MuSR),
``ifeval``, ``math`` (MATH-LvL-5), and ``mmlu_pro`` for MMLU-Pro. Instance ids are
``"<subtask name>/<item id>"`` (e.g. ``"bbh_boolean_expressions/0"``), unique across subtasks.
"""
from __future__ import annotations

import fnmatch
import logging
import re
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from assessors.data.columns import require_columns
from assessors.data.download import locate
from assessors.data.loaders._common import check_binary, latest_per_model, read_csv, select
from assessors.data.names import check_unique, check_whitespace
from assessors.data.results import Results
from assessors.data.item_order import align_rows
from assessors.data.prompts import read_prompt_file
from assessors.errors import ConfigError, DataError

log = logging.getLogger("assessors.data")

NAME = "open_llm_leaderboard_v2"
#: Benchmark file prefix -> short prefix used in subtask names and prompt file names.
BENCHMARK_PREFIX = {"Big-Bench-Hard": "bbh", "MuSR": "musr", "MMLU-Pro": "mmlu_pro",
                    "IFEVAL": "ifeval", "MATH-LvL-5": "math"}
_RESULTS_RE = re.compile(r"^(?P<bench>.+?)(?:__(?P<sub>.+))?_results\.csv$")


def subtask_name(filename: str) -> str | None:
    """``Big-Bench-Hard__snarks_results.csv`` -> ``bbh_snarks``; None if not a results file."""
    m = _RESULTS_RE.match(filename)
    if not m:
        return None
    bench = m["bench"]
    prefix = BENCHMARK_PREFIX.get(bench, re.sub(r"[^0-9a-z]+", "_", bench.lower()).strip("_"))
    return prefix if m["sub"] is None else f"{prefix}_{m['sub']}"


def load_open_llm_leaderboard_v2(
    root: str | Path | None = None,
    cache_dir: str | Path | None = None,
    subtasks: Sequence[str] | str | None = ("bbh_*", "musr_*"),
    mmlu_pro: bool = False,
    prompts: bool = True,
    download: bool = True,
    item_order: str = "detect",
) -> Results:
    """Load per-item Open LLM Leaderboard v2 results, keeping the latest row per model.

    Parameters
    ----------
    root : path, optional
        Data directory holding ``open_llm_leaderboard_v2/`` (or that folder itself). Defaults to
        ``$ASSESSORS_DATA_DIR``, then to a download into ``cache_dir``.
    cache_dir : path, optional
        Download cache (default ``$ASSESSORS_CACHE_DIR`` or ``~/.cache/assessors``).
    subtasks : sequence of str or str or None
        Glob patterns over subtask names (``bbh_*``, ``musr_team_allocation``, ``mmlu_pro``);
        None selects every results file. Default: all Big-Bench-Hard and MuSR subtasks.
    mmlu_pro : bool
        Also load MMLU-Pro (which has no prompt text: its ``prompt`` is NaN).
    prompts : bool
        Read the prompt files (``prompt`` and ``target`` columns).
    download : bool
        Allow downloading when no local copy is found.
    item_order : {"detect", "as_written"}
        The files name their columns in the order a two-process evaluation writes them, but rows
        written by 1, 4 or 8 processes hold other items under those names. ``"detect"`` (default)
        finds each (LLM, benchmark) row's process count from the data and re-keys it
        (:mod:`assessors.data.item_order`); LLMs whose order cannot be told apart are dropped, by
        name. ``"as_written"`` trusts the column names for every row.

    Returns
    -------
    Results
        ``success`` of shape (n_llms, n_instances); LLMs sorted by name; instances in subtask then
        file-column order; ``subgroup`` = subtask name. LLMs missing from a subtask get NaN cells.
    """
    base = locate(NAME, root=root, cache_dir=cache_dir, download=download)
    res_dir = base / "results"
    files = {subtask_name(p.name): p for p in sorted(res_dir.glob("*_results.csv"))}
    files.pop(None, None)
    if not files:
        raise DataError(f"{res_dir}: no *_results.csv files found")
    patterns = None if subtasks is None else ([subtasks] if isinstance(subtasks, str) else list(subtasks))
    if mmlu_pro and patterns is not None and not any(fnmatch.fnmatchcase("mmlu_pro", p) for p in patterns):
        patterns.append("mmlu_pro")
    chosen = select(sorted(files), patterns, "subtask", res_dir)

    blocks, n_old = [], 0
    for sub in chosen:
        block, dropped = _read_block(files[sub])
        blocks.append((sub, block, files[sub]))
        n_old += dropped

    log.info("%s: kept the latest row per model; dropped %d older rows in %d file(s)", NAME, n_old, len(blocks))
    llms = sorted(set().union(*(set(f.index.astype(str)) for _, f, _ in blocks)))
    order_report: dict = {}
    if item_order == "detect":
        blocks, llms, order_report = _detect_item_order(blocks, llms, files, chosen)
    elif item_order != "as_written":
        raise ConfigError(f"item_order={item_order!r}: use 'detect' or 'as_written'")
    mats, inst_frames, no_prompt_file = [], [], {}
    for sub, frame, path in blocks:
        mat, inst = _subtask(sub, frame, path, llms, base, prompts, no_prompt_file)
        mats.append(mat)
        inst_frames.append(inst)

    instances = pd.concat(inst_frames)
    success = np.concatenate(mats, axis=1)
    log.info("%s: loaded %d LLMs x %d instances from %d subtask file(s) (%d NaN cells)", NAME, len(llms),
             success.shape[1], len(blocks), int(np.isnan(success).sum()))
    return Results(instances=instances, llms=llms, success=success, name=NAME,
                   meta={"subtasks": chosen, "root": str(base), "missing_prompt_files": no_prompt_file,
                         "prompt_files": _prompt_files(blocks, prompts, no_prompt_file),
                         "item_order": order_report})


def _prompt_files(blocks: list, prompts: bool, no_prompt_file: dict) -> dict[str, str]:
    """``{subtask: its prompt file relative to the data dir}`` of the subtasks whose prompts were read;
    :func:`~assessors.data.prompts.read_prompt_files` reads them with these instance ids."""
    if not prompts:
        return {}
    return {sub: f"{NAME}/prompts/{sub}_prompts.csv" for sub, _, _ in blocks
            if sub != "mmlu_pro" and sub not in no_prompt_file}


def _detect_item_order(blocks: list, llms: list[str], files: dict, chosen: list[str]):
    """Re-key the chosen blocks' rows and drop the LLMs whose order is undetermined.

    A row's process count belongs to the (LLM, benchmark) run, so it is detected on all the
    benchmark's files, chosen or not. Returns the blocks, the LLMs kept and the order report.
    """
    benches = {_benchmark(p) for _, _, p in blocks}
    extra = [(sub, _read_block(p)[0], p) for sub, p in files.items()
             if sub not in chosen and _benchmark(p) in benches]
    aligned, order_report = _align_item_order(blocks + extra, llms)
    gone = order_report["excluded"]
    blocks = [(sub, f.loc[~f.index.isin(list(gone))], p) for sub, f, p in aligned[:len(blocks)]]
    return blocks, [m for m in llms if m not in gone], order_report


def _subtask(sub: str, frame: pd.DataFrame, path: Path, llms: list[str], base: Path, prompts: bool,
             no_prompt_file: dict) -> tuple[np.ndarray, pd.DataFrame]:
    """One subtask's success (n_llms, n_items), rows in ``llms`` order (NaN for LLMs it lacks), and
    its instances (with prompts when asked; a missing prompt file is recorded in ``no_prompt_file``)."""
    missing = len(llms) - len(frame)
    if missing:
        log.info("%s: %d of %d LLMs have no row in this file (NaN cells)", path.name, missing, len(llms))
    frame = frame.reindex(llms)
    item_ids = frame.columns.tolist()
    inst = pd.DataFrame({"subgroup": sub, "prompt": np.nan, "target": np.nan},
                        index=pd.Index([f"{sub}/{i}" for i in item_ids], name="instance_id"))
    if prompts and sub != "mmlu_pro":
        prompt_file = base / "prompts" / f"{sub}_prompts.csv"
        if not prompt_file.exists():
            no_prompt_file[sub] = str(prompt_file)
        inst = _attach_prompts(inst, prompt_file, sub, item_ids)
    return frame.to_numpy(dtype=np.float32), inst


def _read_block(path: Path) -> tuple[pd.DataFrame, int]:
    """One results file as a (LLM x item id) frame of its latest rows, and how many older rows it dropped."""
    frame = read_csv(path, fast=True)
    require_columns(frame, ("model", "timestamp"), path)
    items = [c for c in frame.columns if c not in ("model", "timestamp")]
    # "model " on some rows of "model" would load as a second LLM
    check_whitespace(frame["model"], path, "model name", lambda i: f"line {i + 2}")
    # validate every row in file order (so the error names the real line), before dropping old rows
    values = check_binary(frame[items].to_numpy(), path, frame["model"].tolist(), items)
    frame = frame[["model", "timestamp"]].assign(_row=np.arange(len(frame)))
    frame = latest_per_model(frame, path, log_each=False)
    block = pd.DataFrame(values[frame["_row"].to_numpy()], index=frame["model"].astype(str).to_numpy(),
                         columns=[str(c) for c in items])
    check_unique(block.columns, path, "item id column")
    return block, frame.attrs.get("n_dropped", 0)


def _benchmark(path: Path) -> str:
    return _RESULTS_RE.match(path.name)["bench"]


def _align_item_order(blocks: list[tuple[str, pd.DataFrame, Path]], llms: list[str]):
    """Re-key every (LLM, benchmark) row to its column names; see :mod:`assessors.data.item_order`.

    Returns the re-keyed blocks and a report: per benchmark, each LLM's detected process count,
    and the LLMs excluded because their order could not be told apart.
    """
    report: dict = {"benchmarks": {}, "excluded": {}}
    out = list(blocks)
    for bench in dict.fromkeys(_benchmark(p) for _, _, p in blocks):
        _align_benchmark(bench, blocks, llms, out, report)
    if report["excluded"]:
        log.warning("%s: dropped %d LLM(s) whose item order cannot be told from the data: %s", NAME,
                    len(report["excluded"]), "; ".join(f"{m} ({why})" for m, why in report["excluded"].items()))
    return out, report


def _align_benchmark(bench: str, blocks: list, llms: list[str], out: list, report: dict) -> None:
    """Re-key one benchmark's blocks in ``out`` and add its process counts and exclusions to ``report``."""
    idx = [k for k, (_, _, p) in enumerate(blocks) if _benchmark(p) == bench]
    frames = [blocks[k][1].reindex(llms) for k in idx]
    aligned = align_rows([f.to_numpy(dtype=float) for f in frames], [f.columns for f in frames])
    if aligned is None:
        log.info("%s: column names are not a process order; rows used as written", bench)
        return
    values, det = aligned
    ranks = _record_order(bench, llms, det, frames, report)
    for k, v, f in zip(idx, values, frames):
        sub, _, path = blocks[k]
        out[k] = (sub, pd.DataFrame(v, index=f.index, columns=f.columns).loc[f.notna().any(axis=1)], path)
    moved = {m: r for m, r in ranks.items() if r not in (0, det.column_ranks)}
    if moved:
        log.warning("%s: re-keyed %d of %d LLMs whose rows were written by another number of processes "
                    "than the column names assume: %s", bench, len(moved), len(ranks),
                    ", ".join(f"{m} ({r})" for m, r in sorted(moved.items())))


def _record_order(bench: str, llms: list[str], det, frames: list[pd.DataFrame], report: dict) -> dict[str, int]:
    """Add one benchmark's detected process counts (of the LLMs it has rows for) and its
    undetermined LLMs to ``report``; return the counts."""
    have = np.logical_or.reduce([f.notna().any(axis=1).to_numpy() for f in frames])
    ranks = {m: int(r) for m, r, h in zip(llms, det.ranks, have) if h}
    report["benchmarks"][bench] = {"column_ranks": det.column_ranks, "ranks": ranks}
    report["excluded"].update({m: f"{bench}: item order undetermined"
                               for m, st, h in zip(llms, det.status, have) if h and st == "undetermined"})
    return ranks


def _attach_prompts(inst: pd.DataFrame, path: Path, sub: str, item_ids: list[str]) -> pd.DataFrame:
    if not path.exists():
        log.warning("%s: no prompt file for subtask %s; its %d instances have no prompt text", path, sub, len(inst))
        return inst
    # the one prompt-file reader and id rule (strict: a truncated last row is an error); blank prompts are
    # kept for data validation to flag by id
    table = read_prompt_file(path, required=("instance_id", "prompt", "target"), blank_prompts=True)
    table = table.set_index("instance_id")
    extra = len(table.index.difference(item_ids))
    if extra:
        log.info("%s: %d prompt rows have no results column and are not loaded", path.name, extra)
    have = table.reindex(item_ids)
    n_missing = int(have["prompt"].isna().sum())
    if n_missing:
        log.warning("%s: %d of %d result items have no prompt row (prompt NaN)", path.name, n_missing, len(item_ids))
    inst["prompt"] = have["prompt"].to_numpy(dtype=object)
    inst["target"] = have["target"].to_numpy(dtype=object)
    return inst
