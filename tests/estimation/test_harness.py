"""The harness end to end on a tiny simulated benchmark, with an in-memory recorder."""
import multiprocessing

import numpy as np
import pytest
import pandas as pd
from omegaconf import OmegaConf

from assessors.data.results import Results
from assessors.errors import ConfigError
from assessors.estimation import harness
from assessors.estimation.benchmark import base, lasso
from assessors.estimation.benchmark.lasso import LassoCore
from assessors.tasks import benchmark_prediction as task
from assessors.estimation.benchmark.aipw import AIPW
from assessors.estimation.benchmark.random_sampling import RandomSampling
from assessors.estimation.benchmark.random_sampling_learn import RandomSamplingLearn
from tests.estimation.conftest import simulate


class Recorder:
    def __init__(self):
        self.metrics, self.figures, self.tables, self.texts = {}, {}, {}, {}

    def log_metrics(self, m, step=None):
        self.metrics.update(m)

    def log_figure(self, fig, path):
        self.figures[path] = fig

    def log_table(self, df, path):
        self.tables[path] = df

    def log_text(self, text, path):
        self.texts[path] = text


def test_splits():
    acc = np.linspace(0, 1, 20)
    src, tgt = harness.model_split(acc, "extrapolation", 0)
    assert set(src) == set(range(10)) and set(tgt) == set(range(14, 20))
    src, tgt = harness.model_split(acc, "interpolation", 3)
    assert len(tgt) == 5 and not set(src) & set(tgt)


def test_trials_of_one_split_share_it_and_its_source_fits(monkeypatch):
    acc = np.linspace(0, 1, 40)
    splits = [harness.model_split(acc, "interpolation", t, trials_per_split=3) for t in range(6)]
    assert all(np.array_equal(splits[t][1], splits[0][1]) for t in (1, 2))
    assert not np.array_equal(splits[3][1], splits[0][1]) and np.array_equal(splits[5][1], splits[3][1])
    assert np.array_equal(splits[3][1], harness.model_split(acc, "interpolation", 1)[1])  # split 1 = old trial 1's
    with pytest.raises(ConfigError, match="trials_per_split"):
        harness.model_split(acc, "interpolation", 0, trials_per_split=0)
    # the lasso path depends on the source LLMs only: fitted once per split, not once per trial
    S, _ = simulate(n_llms=40, n_items=120, seed=4)
    paths = []
    real = lasso.lasso_path
    monkeypatch.setattr(lasso, "lasso_path", lambda *a, **k: paths.append(1) or real(*a, **k))
    ests = {"lasso": LassoCore(), "random_sampling": RandomSampling()}
    llms = [f"m{i}" for i in range(40)]
    for per_split, fits in ((2, 2), (1, 4)):
        base._CACHE.clear()
        paths.clear()
        df = harness.evaluate_benchmark("sim", S, llms, ests, ["interpolation"], [10, 20], trials=4,
                                        progress=False, trials_per_split=per_split)
        assert len(paths) == fits
        targets = df[df.method == "random_sampling"].groupby("trial")["llm"].apply(frozenset)
        assert (targets[0] == targets[1]) == (per_split == 2) and targets[1] != targets[2]
        cores = df[(df.method == "random_sampling") & (df["size"] == 10)].groupby("trial")["point"].apply(tuple)
        assert cores[0] != cores[1]  # each trial draws its own core set


def test_run_with_recorder(monkeypatch):
    S, _ = simulate(n_llms=40, n_items=150, seed=0)
    res = Results(instances=pd.DataFrame(index=[f"i{j}" for j in range(150)]), llms=[f"m{i}" for i in range(40)],
                  success=S, name="sim")
    monkeypatch.setattr(task, "load_benchmarks", lambda cfg: {"sim": res})
    B = "assessors.estimation.benchmark"
    cfg = OmegaConf.create({
        "estimators": {"random_sampling": {"_target_": f"{B}.random_sampling.RandomSampling"},
                       "random_sampling_learn": {"_target_": f"{B}.random_sampling_learn.RandomSamplingLearn"},
                       "aipw": {"_target_": f"{B}.aipw.AIPW"}},
        "benchmark_prediction": {"splits": ["interpolation", "extrapolation"], "sizes": [20, 200], "trials": 3,
                                 "main_size": 20, "target_fraction": 0.25, "benchmarks": {}, "progress": False,
                                 "trials_per_method": {"aipw": 2}}})
    rec = Recorder()
    metrics = task.execute(cfg, rec)
    assert "report.md" in rec.texts and "EGR" in rec.texts["report.md"]
    # a method on fewer trials is named in the report, with how many split-trials it ran (2 of 3 x 2 splits)
    loud = [line for line in rec.texts["report.md"].splitlines() if line.startswith("**FEWER TRIALS")]
    assert len(loud) == 1 and loud[0].endswith("aipw 4.**") and "of the 6 split-trials" in loud[0]
    table = rec.tables["tables/paper_table_n20.csv"].set_index("method")
    assert table.loc["random_sampling", "interpolation EGR"] == 0
    assert np.isfinite(table.loc["aipw", "extrapolation EG"])
    assert "plots/eg_vs_size.png" in rec.figures
    assert metrics["aipw.interpolation_EG.n20"] > 0
    assert (rec.tables["tables/records.parquet"]["size"] == 20).all()  # 200 >= 150 items: skipped
    timing = rec.tables["tables/timing.csv"].set_index("method")
    assert set(timing.index) == {"random_sampling", "random_sampling_learn", "aipw"}
    assert timing["fits"].to_dict() == {"random_sampling": 6, "random_sampling_learn": 6, "aipw": 4}  # splits x trials
    assert (timing["total_s"] > 0).all()
    assert timing["total_s"].is_monotonic_decreasing and "n=20" in timing


def test_killed_run_resumes_without_redoing_finished_trials(monkeypatch, tmp_path):
    S, _ = simulate(n_llms=30, n_items=120, seed=1)
    res = Results(instances=pd.DataFrame(index=[f"i{j}" for j in range(120)]), llms=[f"m{i}" for i in range(30)],
                  success=S, name="sim")
    monkeypatch.setattr(task, "load_benchmarks", lambda cfg: {"a": res, "b": res})
    B = "assessors.estimation.benchmark"
    cfg = OmegaConf.create({
        "estimators": {"random_sampling": {"_target_": f"{B}.random_sampling.RandomSampling"},
                       "aipw": {"_target_": f"{B}.aipw.AIPW"}},
        "benchmark_prediction": {"splits": ["interpolation", "extrapolation"], "sizes": [20, 40], "trials": 3,
                                 "main_size": 20, "target_fraction": 0.25, "benchmarks": {}, "progress": False,
                                 "checkpoint_dir": str(tmp_path / "ck")}})
    uninterrupted = Recorder()
    task.execute(OmegaConf.merge(cfg, {"benchmark_prediction": {"checkpoint_dir": None}}), uninterrupted)
    real = harness._fit_and_estimate
    calls, kill = [], [True]

    def killed_at_call_30(proto, unit, core, size, trial, features):
        calls.append(trial)
        if kill[0] and len(calls) == 30:
            kill[0] = False  # b's third split-trial (each has 2 sizes x 2 methods = 4 fits)
            raise RuntimeError("killed")
        return real(proto, unit, core, size, trial, features)

    monkeypatch.setattr(harness, "_fit_and_estimate", killed_at_call_30)
    with pytest.raises(RuntimeError, match="killed"):
        task.execute(cfg, Recorder())
    folders = {p.name.split("-")[0]: p for p in (tmp_path / "ck").iterdir()}
    assert len(list(folders["a"].glob("*.parquet"))) == 6 and len(list(folders["b"].glob("*.parquet"))) == 1
    assert not list((tmp_path / "ck").rglob("*.tmp"))  # atomic: no half-written checkpoint is left
    calls.clear()
    rec = Recorder()
    task.execute(cfg, rec)
    assert len(calls) == 5 * 4  # only b's five unfinished split-trials ran
    cols = ["benchmark", "split", "size", "trial", "method", "llm", "point", "ci_low", "ci_high"]
    records = "tables/records.parquet"
    pd.testing.assert_frame_equal(rec.tables[records][cols], uninterrupted.tables[records][cols])
    calls.clear()
    cfg.benchmark_prediction.trials = 4  # more trials reuse the finished ones
    task.execute(cfg, Recorder())
    assert len(calls) == 2 * 2 * 4 and set(calls) == {3}
    cfg.benchmark_prediction.sizes = [20]  # a changed setting is a different checkpoint
    calls.clear()
    task.execute(cfg, Recorder())
    assert len(calls) == 2 * 2 * 4 * 2
    calls.clear()
    cfg.benchmark_prediction.trials_per_split = 2  # so is sharing splits: other interpolation targets
    task.execute(cfg, Recorder())
    assert len(calls) == 2 * 2 * 4 * 2


def test_benchmarks_in_parallel_processes_give_the_same_records(monkeypatch):
    data = {}
    for k, seed in (("a", 2), ("b", 3)):
        S, _ = simulate(n_llms=30, n_items=100, seed=seed)
        data[k] = Results(instances=pd.DataFrame(index=[f"i{j}" for j in range(100)]),
                          llms=[f"m{i}" for i in range(30)], success=S, name=k)
    monkeypatch.setattr(task, "load_benchmarks", lambda cfg: data)
    B = "assessors.estimation.benchmark"
    cfg = OmegaConf.create({
        "estimators": {"random_sampling": {"_target_": f"{B}.random_sampling.RandomSampling"},
                       "aipw": {"_target_": f"{B}.aipw.AIPW"}},
        "benchmark_prediction": {"splits": ["interpolation"], "sizes": [20], "trials": 2, "main_size": 20,
                                 "target_fraction": 0.25, "benchmarks": {}, "progress": False, "n_jobs": 1}})
    serial, parallel = Recorder(), Recorder()
    task.execute(cfg, serial)
    cfg.benchmark_prediction.n_jobs = 2
    cfg.benchmark_prediction.trial_block = 1  # one job per benchmark and trial
    task.execute(cfg, parallel)
    # the idle workers are stopped before the report: each holds its benchmarks' data and fits
    assert not [p for p in multiprocessing.active_children() if p.name.startswith("LokyProcess")]
    cols = ["benchmark", "trial", "method", "llm", "point", "ci_low", "ci_high"]
    a, b = (r.tables["tables/records.parquet"][cols].sort_values(cols[:4]).reset_index(drop=True)
            for r in (serial, parallel))
    assert set(a["benchmark"]) == {"a", "b"}
    pd.testing.assert_frame_equal(a, b)
