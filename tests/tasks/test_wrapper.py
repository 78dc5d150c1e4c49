"""The task wrapper: one tracked run per task, FAILED or KILLED on errors, the optimised metric by name."""
from __future__ import annotations

import math

import pytest
from mlflow.tracking import MlflowClient
from omegaconf import OmegaConf

from assessors.errors import ConfigError
from assessors.tasks.entry import run_task
from assessors.tasks.wrapper import get_metric_value, task_wrapper


def _cfg(tmp_path, **extra):
    return OmegaConf.create({
        "run_name": None,
        "tracking": {"_target_": "assessors.tracking.MlflowTracker", "db_path": str(tmp_path / "mlflow.db"),
                     "artifact_root": str(tmp_path / "art"), "experiment": "wrapped", "log_model": False},
        **extra})


def _runs(tmp_path):
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    exp = client.get_experiment_by_name("wrapped")
    return client.search_runs([exp.experiment_id])


@task_wrapper("demo", tags=lambda cfg: {"kind": "demo"})
def demo(cfg, run):
    run.log_metrics({"score": 0.75})
    if cfg.get("fail") == "error":
        raise ValueError("broken")
    if cfg.get("fail") == "interrupt":
        raise KeyboardInterrupt("stopped")
    return {"score": 0.75, "other": 2.0}


def test_a_finished_task_is_one_tagged_timed_run(tmp_path):
    assert demo(_cfg(tmp_path)) == {"score": 0.75, "other": 2.0}
    (run,) = _runs(tmp_path)
    assert run.info.status == "FINISHED" and run.info.run_name == "demo"
    assert run.data.tags["kind"] == "demo" and run.data.metrics["time/task_s"] >= 0
    assert run.data.metrics["score"] == 0.75


@pytest.mark.parametrize("fail,exc,status", [("error", ValueError, "FAILED"), ("interrupt", KeyboardInterrupt, "KILLED")])
def test_errors_end_the_run_failed_and_interrupts_killed(tmp_path, fail, exc, status):
    with pytest.raises(exc):
        demo(_cfg(tmp_path, fail=fail))
    (run,) = _runs(tmp_path)
    assert run.info.status == status
    assert "time/task_s" not in run.data.metrics  # only a finished task has a wall time


def test_run_task_returns_the_configured_metric(tmp_path):
    task = {"_target_": "tests.tasks.test_wrapper.demo", "_partial_": True}
    assert run_task(_cfg(tmp_path, task=task, optimized_metric="score")) == 0.75
    assert run_task(_cfg(tmp_path, task=task, optimized_metric="other")) == 2.0
    assert run_task(_cfg(tmp_path, task=task, optimized_metric=None)) is None
    assert run_task(_cfg(tmp_path, task=task)) is None  # unset: nothing to optimise
    with pytest.raises(ConfigError, match="optimized_metric='objective' is not a metric of this task.*'other', 'score'"):
        run_task(_cfg(tmp_path, task=task, optimized_metric="objective"))


def test_get_metric_value():
    assert get_metric_value({"a": 1}, None) is None
    assert get_metric_value({"a": 1}, "a") == 1.0
    assert math.isnan(get_metric_value({"a": float("nan")}, "a"))
    with pytest.raises(ConfigError, match="not a metric"):
        get_metric_value(None, "a")


def test_every_preset_and_mode_points_at_a_task(compose):
    import importlib

    from tests.conftest import CONF

    cfgs = [compose([f"experiment={p.stem}"]) for p in sorted((CONF / "experiment").glob("*.yaml"))]
    cfgs += [compose([f"mode={m}"], config_name="predict") for m in ("score", "route", "serve", "onboard")]
    for cfg in cfgs:
        module, _, name = cfg.task._target_.rpartition(".")
        assert module.startswith("assessors.tasks."), cfg.task._target_
        assert callable(getattr(importlib.import_module(module), name))
        assert "optimized_metric" in cfg
