"""The OOD evaluation sweep: ``python train.py -m experiment=ood_sweep``.

Each sweep job is one cell, a split preset (``ood_sweep.preset``, a name in ``ood_sweep.presets``) at
one seed: :func:`run_cell` composes ``train``'s config with the preset's overrides, evaluates every
method at every calibration budget (:mod:`assessors.tasks.ood_sweep_cell`) and logs the results as
metrics of one MLflow run tagged with the cell's config hash, so that a restarted sweep skips the
cells that finished (:mod:`assessors.grid.resume`). When the sweep ends,
:class:`OodSweepReportCallback` reads the newest finished run of every cell and writes the report
(:mod:`assessors.reporting.ood_sweep`); ``python train.py experiment=ood_sweep_report`` rebuilds it.
"""
from __future__ import annotations

import logging
import time
from pathlib import Path

import pandas as pd
from omegaconf import DictConfig, OmegaConf, open_dict

from assessors.grid.resume import TAG_HASH, config_hash, finished_run, job_tags
from assessors.tasks.grid_callback import GridReportCallback
from assessors.tasks.ood_sweep_cell import (COLUMNS, evaluate_split, held_out_groups, in_distribution_by_group,
                                            leave_one_llm_out)
from assessors.tasks.wrapper import task_wrapper
from assessors.threads import fit_threads, thread_limits

log = logging.getLogger(__name__)

CONF = Path(__file__).resolve().parents[2] / "conf"
TAG_PRESET, TAG_SWEEP = "ood_sweep.preset", "ood_sweep.name"
#: Metric names of a cell's rows: ``cell/<method>/k<k>/<group>/<metric>`` (group ``all``: every scored prompt).
PREFIX = "cell"
METRICS = ("auc", "ece", "band", "n_llms", "n_prompts", "below_chance", "fallback")


def compose_train(overrides: list[str]) -> DictConfig:
    """``train``'s config with ``overrides``: through the running Hydra app's config search path
    (in a sweep job), or from this checkout's ``conf/`` outside one."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    if GlobalHydra.instance().is_initialized():
        return compose("train", overrides=overrides)
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose("train", overrides=overrides)


def cell_config(cfg: DictConfig, preset: str | None = None) -> DictConfig:
    """The config a cell runs: ``train`` with the preset's overrides, then ``ood_sweep.overrides``,
    at ``cfg.seed``; paths, tracking and thread settings from the sweep's config. Its ``grid`` node
    (part of the config hash) holds what else decides the cell's result."""
    sw = cfg.ood_sweep
    preset = preset or sw.preset
    if preset not in sw.presets:
        from assessors.errors import ConfigError

        raise ConfigError(f"ood_sweep.preset={preset!r} is not one of ood_sweep.presets: {sorted(sw.presets)}")
    inner = compose_train([*sw.presets[preset], *sw.overrides, f"seed={cfg.seed}"])
    with open_dict(inner):
        for key in ("paths", "tracking", "threads", "llm_jobs", "experiment_name"):
            if key in cfg:
                inner[key] = cfg[key]
        inner.grid = {"split_name": preset, "budgets": list(sw.budgets), "baselines": dict(sw.baselines),
                      "leave_one_llm_out": preset in sw.leave_one_llm_out, "served": bool(sw.served)}
    return inner


def _cell_rows(cfg: DictConfig) -> tuple[pd.DataFrame, dict]:
    """The long table (:data:`~assessors.tasks.ood_sweep_cell.COLUMNS`) and wall times of ``cfg``'s cell."""
    sw = cfg.ood_sweep
    inner = cell_config(cfg)
    budgets, baselines = list(sw.budgets), dict(sw.baselines)
    if sw.preset in sw.in_distribution:
        # the same assessor in distribution, scored on each subtask hold-out's prompts (the presets'
        # own overrides say which; ood_sweep.overrides may not apply to every preset's data)
        groups = {p: held_out_groups(compose_train(list(sw.presets[p]))) for p in sw.presets}
        return in_distribution_by_group(inner, {p: g for p, g in groups.items() if g})
    if sw.preset in sw.leave_one_llm_out:
        return leave_one_llm_out(inner, budgets, baselines)
    return evaluate_split(inner, budgets, baselines)


def _tags(cfg: DictConfig) -> dict[str, str]:
    return {**job_tags(config_hash(cell_config(cfg))), TAG_PRESET: str(cfg.ood_sweep.preset),
            TAG_SWEEP: str(cfg.ood_sweep.name)}


def run_cell(cfg: DictConfig) -> dict[str, float]:
    """Run one cell of the sweep, or skip it when an identical cell's run FINISHED.

    Returns
    -------
    dict with ``skipped`` (1.0 when the result came from an earlier run) and the latent assessor's
    mean test AUC at the largest budget (``auc_latent``).
    """
    from assessors.tasks.config import tracker_from_cfg

    done = finished_run(tracker_from_cfg(cfg), config_hash(cell_config(cfg)))
    if done is not None:
        log.info("OOD sweep cell %s seed %s already finished in run %s: skipping", cfg.ood_sweep.preset, cfg.seed,
                 done.info.run_id)
        return {"skipped": 1.0}
    return _run_cell(cfg)


@task_wrapper("ood_sweep", tags=_tags)
def _run_cell(cfg: DictConfig, run) -> dict[str, float]:
    t0, c0 = time.perf_counter(), time.process_time()
    # BLAS and torch within this process's share of the cores, as train.py's task (a Dask worker: one thread)
    with thread_limits(fit_threads(threads=cfg.get("threads"))):
        long, times = _cell_rows(cfg)
    long = long.reindex(columns=COLUMNS)
    # the CPU time beside the wall time: on shared cores a cell's wall time moves several-fold with the
    # other jobs' load, its CPU time much less (what a sweep's duration on free cores is projected from)
    metrics = {f"time/{k}": float(v) for k, v in times.items()} | {"time/cell_s": time.perf_counter() - t0,
                                                                    "time/cell_cpu_s": time.process_time() - c0}
    for row in long.itertuples(index=False):
        group = row.group if isinstance(row.group, str) else "all"
        for m in METRICS:
            v = getattr(row, m)
            if pd.notna(v):
                metrics[f"{PREFIX}/{row.method}/k{int(row.k)}/{group}/{m}"] = float(v)
    run.log_metrics(metrics)
    run.log_table(long, "ood_sweep/cell.csv")
    latent = long[(long["method"] == "latent") & long["group"].isna()]
    out = {"skipped": 0.0, "time/cell_s": metrics["time/cell_s"]}
    if not latent.empty:
        out["auc_latent"] = float(latent.sort_values("k")["auc"].iloc[-1])
    log.info("OOD sweep cell %s seed %s: %.0f s", cfg.ood_sweep.preset, cfg.seed, metrics["time/cell_s"])
    return out


def load_cells(tracker, name: str) -> pd.DataFrame:
    """The newest FINISHED run of every (preset, seed) cell of sweep ``name``, as one long table:
    ``preset, seed, method, k, group`` and the metrics (:data:`METRICS`), plus the cell's wall and CPU
    time ``cell_s`` and ``cell_cpu_s`` (NaN for cells logged before it was recorded)."""
    from assessors.errors import DataError

    mlflow = tracker._setup()
    runs = mlflow.search_runs(experiment_names=[tracker.experiment], max_results=50000,
                              filter_string=f"attributes.status = 'FINISHED' and tags.`{TAG_SWEEP}` = '{name}'")
    if runs.empty:
        raise DataError(f"no finished OOD sweep cells named {name!r} in MLflow experiment {tracker.experiment!r} "
                        f"at {tracker.uri}; run python train.py -m experiment=ood_sweep first")
    runs["seed"] = runs["params.seed"].astype(int)
    runs = runs.sort_values("start_time", ascending=False).drop_duplicates([f"tags.{TAG_PRESET}", "seed"])
    rows = []
    for _, r in runs.iterrows():
        cell = {}
        for col, v in r.items():
            if not col.startswith(f"metrics.{PREFIX}/") or pd.isna(v):
                continue
            method, k, group, metric = col.split("/", 1)[1].split("/")
            cell.setdefault((method, int(k[1:]), None if group == "all" else group), {})[metric] = v
        for (method, k, group), vals in cell.items():
            rows.append({"preset": r[f"tags.{TAG_PRESET}"], "seed": r["seed"], "method": method, "k": k,
                         "group": group, **vals, "cell_s": r.get("metrics.time/cell_s"),
                         "cell_cpu_s": r.get("metrics.time/cell_cpu_s", float("nan")),
                         "run_id": r["run_id"], "hash": r[f"tags.{TAG_HASH}"]})
    return pd.DataFrame(rows)


def write_report(cfg: DictConfig, out_dir: Path) -> Path:
    """Build the sweep's report from its MLflow runs into ``out_dir``, log it as the artifacts of a
    run ``ood_sweep report`` and print its summary; returns the report's path."""
    from assessors.reporting.ood_sweep import build_report, console_summary
    from assessors.tasks.config import tracker_from_cfg
    from assessors.tracking import git_commit

    tracker = tracker_from_cfg(cfg)
    cells = load_cells(tracker, str(cfg.ood_sweep.name))
    path = build_report(cells, out_dir, list(cfg.ood_sweep.presets), commit=git_commit())
    with tracker.start_run("ood_sweep report", tags={TAG_SWEEP + ".report": str(cfg.ood_sweep.name)}) as run:
        for f in sorted(Path(out_dir).iterdir()):
            run.log_artifact(str(f), "ood_sweep_report")
        where = run.location
    print(console_summary(cells, path, where,
                          next_command="python train.py experiment=ood_sweep_report   # rebuild this report",
                          presets=list(cfg.ood_sweep.presets)))
    return path


def ood_sweep_report(cfg: DictConfig) -> dict:
    """The task of ``python train.py experiment=ood_sweep_report``: the report of the finished cells."""
    write_report(cfg, Path(cfg.ood_sweep.report_dir))
    return {}


class OodSweepReportCallback(GridReportCallback):
    """``hydra.callbacks.ood_sweep_report`` of ``experiment=ood_sweep``: end stale runs when the sweep
    starts (as the grid's), write the report into ``<sweep dir>/report`` when it ends (``enabled: false``:
    no report)."""

    def __init__(self, enabled: bool = True) -> None:
        super().__init__(baselines=False, enabled=enabled)

    def on_multirun_end(self, config: DictConfig, **kwargs) -> None:
        if self.enabled:
            write_report(config, Path(OmegaConf.select(config, "hydra.sweep.dir")) / "report")
