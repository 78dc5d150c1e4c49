"""The console: short warnings, one line per expected error (no traceback), a short train.py summary,
and reports written to the run folder."""
from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from assessors.errors import ConfigError, DataError
from assessors.reporting.console import ConsoleFilter, ConsoleFormatter, shorten
from assessors.tasks.entry import expected_error

ROOT = Path(__file__).resolve().parents[2]
# the README's tiny overrides (a fast run on three BBH subtasks) and a small classifier grid
TINY = ["data.subtasks=[bbh_navigate,bbh_snarks,bbh_sports_understanding]", "selector.size=30",
        "compare.specific=false", "compare.all_train_data=false", "compare.reference_only=false",
        "compare.random_selector=false", "plots=false", "classifier.param_grid.n_estimators=[50]", "paper_generic_classifier.param_grid.n_estimators=[50]",
        "classifier.param_grid.max_depth=[2]"]
# tqdm's progress bars (carriage-return updates) are not counted as console lines
PROGRESS = re.compile(r"\d+%\|.*\|| \d+/\d+ \[\d")


def console_lines(text: str) -> list[str]:
    """The lines a terminal keeps, progress bars left out."""
    last = [line.split("\r")[-1] for line in text.split("\n")]
    return [seg for seg in last if seg.strip() and not PROGRESS.search(seg)]


def test_shorten_cuts_before_the_list_of_names():
    names = ", ".join(f"org__model-{i}-7b" for i in range(40))
    msg = f"Big-Bench-Hard: re-keyed 40 of 78 LLMs whose rows were written by another number of processes: {names}"
    short = shorten(msg, where="train.log")
    assert short == ("Big-Bench-Hard: re-keyed 40 of 78 LLMs whose rows were written by another number of processes "
                     "[... full text in train.log]")
    assert shorten("short message") == "short message"
    assert len(shorten("x" * 1000)) < 300  # no place to cut: cut at the limit


def _record(name: str, level: int, msg: str, **extra) -> logging.LogRecord:
    rec = logging.LogRecord(name, level, __file__, 1, msg, None, None)
    rec.__dict__.update(extra)
    return rec


def test_console_filter_keeps_project_warnings_and_everyones_errors():
    f = ConsoleFilter()
    assert f.filter(_record("assessors.data.validate", logging.WARNING, "w"))
    assert not f.filter(_record("assessors.tasks.train", logging.INFO, "i"))
    assert not f.filter(_record("mlflow.pyfunc", logging.WARNING, "third-party chatter"))
    assert f.filter(_record("mlflow.store", logging.ERROR, "e"))
    assert not f.filter(_record("assessors.tasks.entry", logging.ERROR, "traceback", file_only=True))
    long = "data: 200 LLMs flagged: " + ", ".join(["name"] * 200)
    assert ConsoleFormatter().format(_record("assessors.x", logging.WARNING, long)).startswith(
        "WARNING data: 200 LLMs flagged [... full text in")
    # an error is shown whole: its message ends with the fix
    fix = "pool: missing bbh_x_prompts.csv (looked under " + ", ".join(["/a/b"] * 80) + "). Set ASSESSORS_DATA_DIR"
    assert ConsoleFormatter().format(_record("assessors.serving", logging.ERROR, fix)).endswith("Set ASSESSORS_DATA_DIR")
    try:
        raise DataError(fix)
    except DataError:
        import sys

        rec = _record("assessors.serving", logging.ERROR, "start-up failed", exc_info=sys.exc_info())
    line = ConsoleFormatter().format(rec)
    assert line.startswith("ERROR start-up failed: DataError: pool") and line.endswith("Set ASSESSORS_DATA_DIR")
    assert "Traceback" not in line
    try:
        raise ConnectionError("cannot reach http://h/v1?key=" + "sk" + "-abcdefghijklmnopqrstu")
    except ConnectionError:
        rec = _record("assessors.serving", logging.ERROR, "start-up failed", exc_info=sys.exc_info())
    assert "abcdefghijklmnop" not in ConsoleFormatter().format(rec)  # the exception's line is redacted like the message


def test_expected_errors_are_found_behind_wrappers():
    try:
        try:
            raise DataError("bad file")
        except DataError as e:
            raise RuntimeError("Error in call to target") from e
    except RuntimeError as wrapped:
        assert isinstance(expected_error(wrapped), DataError)
    assert isinstance(expected_error(ConfigError("x")), ConfigError)
    assert expected_error(KeyError("a bug")) is None


def test_every_task_writes_its_report_to_the_run_folder_and_prints_its_headline(tmp_path, monkeypatch, capsys):
    from assessors.tasks import wrapper

    monkeypatch.setattr(wrapper, "run_folder", lambda: tmp_path / "run")

    @wrapper.task_wrapper("demo")
    def demo(cfg, run):
        import pandas as pd

        run.log_table(pd.DataFrame({"a": [1, 2]}), "tables/t.csv")
        run.log_text("# Demo\n\n| m | v |\n|---|---|\n| x | 1 |\n\n## Details\n\nmore", "report.md")
        return {"v": 1.0}

    assert demo(OmegaConf.create({"tracking": None})) == {"v": 1.0}
    assert (tmp_path / "run" / "tables" / "t.csv").exists() and (tmp_path / "run" / "report.md").exists()
    out = capsys.readouterr().out
    assert "| x | 1 |" in out and "Details" not in out and str(tmp_path / "run" / "report.md") in out


def _run(script: str, *overrides: str, env: dict | None = None, timeout: int = 900) -> subprocess.CompletedProcess:
    environ = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    environ.pop("ASSESSORS_VERBOSE", None)
    return subprocess.run([sys.executable, script, *overrides], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env=environ)


def _bad_table(tmp_path: Path) -> list[str]:
    bad = tmp_path / "bad.csv"
    bad.write_text("llm,instance_id,success\na,1,yes\n")
    return ["data=table", f"data.results_path={bad}"]


def _onboarding_without_endpoint(tmp_path: Path) -> list[str]:
    folder = Path(os.environ["ASSESSORS_DATA_DIR"]) / "open_llm_leaderboard_v2" / "prompts"
    prompts = folder / "bbh_navigate_prompts.csv"
    return ["mode=onboard", f"onboard.prompts=[{prompts}]", "onboard.limit=1", "onboarding.model=nobody",
            "onboarding.base_url=http://127.0.0.1:9/v1", "onboarding.max_retries=0"]


CASES = {
    "missing model uri": ("predict.py", lambda p: ["mode=score", f"prompts={p / 'none.csv'}"],
                          "ConfigError: model_uri is not set"),
    "no endpoint": ("predict.py", _onboarding_without_endpoint, "OfflineError: onboarding got no answers"),
    "oversized reference set": ("train.py", lambda p: ["data.subtasks=[bbh_navigate]", "features=success_pattern",
                                                       "selector.size=100000"], "InfeasibleError: RandomSelector"),
    "missing data dir": ("train.py", lambda p: [f"paths.data_dir={p / 'nowhere'}"], "DataError: data.root="),
    "bad table file": ("train.py", _bad_table, "DataError: "),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_an_expected_error_is_one_line_and_its_traceback_is_in_the_log_file(case, tmp_path):
    script, overrides, line = CASES[case]
    r = _run(script, *overrides(tmp_path), "tracking=none", f"paths.outputs={tmp_path / 'out'}")
    assert r.returncode == 2, r.stderr[-3000:]
    assert "Traceback" not in r.stderr + r.stdout
    errors = [ln for ln in console_lines(r.stderr) if ln.startswith(line.split(":")[0] + ":")]
    assert len(errors) == 1 and errors[0].startswith(line), r.stderr[-3000:]
    (log,) = (tmp_path / "out").glob("*runs/*/*.log")
    assert "Traceback" in log.read_text() and str(log) in errors[0]


@pytest.mark.slow
def test_verbose_shows_the_traceback(tmp_path):
    r = _run("predict.py", "mode=score", f"prompts={tmp_path / 'none.csv'}", "verbose=true",
             f"paths.outputs={tmp_path}")
    assert r.returncode == 2 and "Traceback" in r.stderr and "model_uri is not set" in r.stderr


@pytest.mark.slow
def test_a_small_train_run_prints_a_short_summary(tmp_path):
    """The console of a small ``python train.py``: at most 60 lines and 8,000 characters, progress bars
    left out; the table, the headline, the model, the run folder and the next command are in it."""
    r = _run("train.py", *TINY, f"paths.outputs={tmp_path}")
    assert r.returncode == 0, r.stderr[-3000:]
    lines = console_lines(r.stdout) + console_lines(r.stderr)
    text = "\n".join(lines)
    assert len(lines) <= 60 and len(text) <= 8000, text
    assert "Data: open_llm_leaderboard_v2, 77 LLMs x 678 prompts" in text
    table = re.sub(r" +", " ", text)
    assert "| latent (served) | latent (raw) | paper_generic |" in table and "random_selector" not in text
    assert "latent (served): mean test AUC" in text and "Next: " in text and "predict.py mode=score" in text
    assert "Served: " in text and "test LLMs by the assessor" in text
    assert "Model: models:/" in text
    assert not any(len(ln) > 400 for ln in lines if not ln.startswith("  python")), text
    (folder,) = (tmp_path / "runs").iterdir()
    assert (folder / "tables" / "auc_per_llm.md").exists() and (folder / "train.log").exists()
    assert f"Run folder: {folder}" in text
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    (run,) = client.search_runs([client.get_experiment_by_name("assessors").experiment_id])
    assert run.info.run_name == "train latent open_llm_leaderboard_v2 random s0"
    assert run.data.metrics["auc/headline"] == run.data.metrics["auc/latent_served"]
    assert {"auc/latent_raw", "auc/paper_generic", "ece/latent_served", "served/n_fallback"} <= set(run.data.metrics)
    assert [a.path for a in client.list_artifacts(run.info.run_id, "logs")] == ["logs/train.log"]  # and in MLflow


@pytest.mark.slow
def test_runs_started_together_get_their_own_folders(tmp_path):
    procs = [subprocess.Popen([sys.executable, "predict.py", "mode=score", f"paths.outputs={tmp_path}"], cwd=ROOT,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL) for _ in range(3)]
    assert [p.wait(timeout=300) for p in procs] == [2, 2, 2]
    assert len(list((tmp_path / "predict_runs").iterdir())) == 3
