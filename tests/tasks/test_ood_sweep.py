"""The OOD sweep preset: its cells compose; its report's tables; a real sweep end to end, then resumed."""
from __future__ import annotations

import os
import sqlite3
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from tests.conftest import ROOT

PRESETS = ["in_distribution", "ood_logic", "ood_language", "ood_algorithmic", "ood_musr", "llm_frontier",
           "kor_llm_split", "routerbench_loo"]


def test_every_preset_of_the_sweep_composes_into_its_own_cell(compose):
    from assessors.grid.resume import config_hash
    from assessors.tasks.ood_sweep import cell_config, held_out_groups

    cfg = compose(["experiment=ood_sweep"])
    params = cfg.hydra.sweeper.params if "hydra" in cfg else None
    assert cfg.task._target_ == "assessors.tasks.ood_sweep.run_cell"
    assert sorted(cfg.ood_sweep.presets) == sorted(PRESETS)
    hashes = set()
    for preset in PRESETS:
        inner = cell_config(cfg, preset)
        assert inner.assessor._target_ == "assessors.core.latent.LatentAssessor"
        assert inner.paths == cfg.paths and inner.grid.split_name == preset
        hashes.add(config_hash(inner))
        # exactly the subtask hold-outs are task hold-outs (budgets apply)
        assert bool(held_out_groups(inner)) == preset.startswith("ood_"), preset
    assert len(hashes) == len(PRESETS)
    other_seed = compose(["experiment=ood_sweep", "seed=1"])
    assert config_hash(cell_config(other_seed, "ood_logic")) != config_hash(cell_config(cfg, "ood_logic"))
    assert params is None or params  # the sweeper's params compose too


def test_a_cells_per_llm_baselines_get_train_pys_thread_settings(compose):
    from assessors.tasks.ood_sweep import cell_config
    from assessors.threads import fit_threads

    train = compose([])
    inner = cell_config(compose(["experiment=ood_sweep"]), "ood_logic")
    assert (inner.llm_jobs, inner.threads, inner.specific) == (train.llm_jobs, train.threads, train.specific)
    # a cell run alone on 2 cores: one thread per per-LLM fit, not both cores for each small fit
    assert fit_threads(int(inner.llm_jobs), inner.threads) == fit_threads(int(train.llm_jobs), train.threads)


def test_a_cells_paper_generic_baseline_is_train_pys_column(compose):
    from assessors.tasks.ood_sweep import cell_config
    from assessors.tasks.wrapper import PAPER

    train = compose([])
    inner = cell_config(compose(["experiment=ood_sweep", "ood_sweep.baselines.paper_generic=true"]), "ood_logic")
    assert inner.grid.baselines.paper_generic
    # the depth-6 point with shared bins and early stopping, not the latent run's two-depth classifier grid
    assert inner[PAPER] == train[PAPER] and inner[PAPER].classifier != inner.classifier
    assert inner[PAPER].classifier.estimator._target_.endswith("BinnedXGBClassifier")


def test_an_unknown_preset_names_the_known_ones(compose):
    from assessors.errors import ConfigError
    from assessors.tasks.ood_sweep import cell_config

    cfg = compose(["experiment=ood_sweep", "ood_sweep.preset=ood_nothing"])
    with pytest.raises(ConfigError, match="ood_logic"):
        cell_config(cfg)


def _cells() -> pd.DataFrame:
    rows = []
    for seed in (0, 1):
        for k, lat, base in ((0, 0.45, 0.55), (30, 0.62, 0.60), (100, 0.70, 0.61)):
            rows.append({"preset": "ood_logic", "seed": seed, "method": "latent", "k": k, "group": None,
                         "auc": lat + 0.01 * seed, "ece": 0.1, "band": 0.5 + k / 400, "cell_s": 100.0})
            rows.append({"preset": "ood_logic", "seed": seed, "method": "all_train_data", "k": k, "group": None,
                         "auc": base, "ece": 0.05, "band": np.nan, "cell_s": 100.0})
            # the latent assessor as served: above every baseline, yet never counted as one
            rows.append({"preset": "ood_logic", "seed": seed, "method": "served", "k": k, "group": None,
                         "auc": 0.9, "ece": 0.05, "band": 0.8, "fallback": 0.5 if k == 0 else 0.0, "cell_s": 100.0})
            rows.append({"preset": "ood_logic", "seed": seed, "method": "reference_only", "k": k, "group": None,
                         "auc": 0.58, "ece": 0.2, "band": np.nan, "cell_s": 100.0})
        rows.append({"preset": "in_distribution", "seed": seed, "method": "latent", "k": 0, "group": None,
                     "auc": 0.73, "ece": 0.04, "band": 0.9, "cell_s": 50.0})
        rows.append({"preset": "in_distribution", "seed": seed, "method": "latent", "k": 0, "group": "ood_logic",
                     "auc": 0.71, "ece": 0.04, "band": 0.9, "cell_s": 50.0})
        # the in-distribution cell's served row on the same subtasks: not the in-distribution reference
        rows.append({"preset": "in_distribution", "seed": seed, "method": "served", "k": 0, "group": "ood_logic",
                     "auc": 0.99, "ece": 0.04, "band": 0.9, "cell_s": 50.0})
    return pd.DataFrame(rows)


def test_report_tables_compare_each_budget_with_the_best_baseline_at_that_budget(tmp_path):
    from assessors.reporting.ood_sweep import build_report, holdout_table, metric_table

    cells = _cells()
    auc = metric_table(cells, "auc", ["in_distribution", "ood_logic"])
    assert list(auc.index) == ["in_distribution", "ood_logic"]
    assert auc.loc["ood_logic", "latent k=30"] == pytest.approx(0.625)  # mean over the two seeds
    assert np.isnan(auc.loc["in_distribution", "latent k=30"])
    holdouts = holdout_table(cells)
    assert list(holdouts.index) == [("ood_logic", 0), ("ood_logic", 1)]
    row = holdouts.loc[("ood_logic", 0)]
    assert row["best baseline k=0"] == 0.58 and row["(which) k=0"] == "reference_only"
    assert row["best baseline k=100"] == 0.61 and row["(which) k=100"] == "all_train_data"
    assert row["in distribution"] == 0.71
    assert row["served k=0"] == 0.9 and row["latent k=0"] == 0.45
    assert list(auc.columns[:2]) == ["latent k=0", "latent k=30"] and "served k=0" in auc.columns
    path = build_report(cells, tmp_path / "report", ["in_distribution", "ood_logic"], commit="abc1234")
    text = path.read_text()
    assert "abc1234" in text and "| ood_logic" in text and "served a fallback" in text
    for name in ("auc_by_budget.png", "ece_by_budget.png", "band_by_budget.png", "cells.csv", "holdouts.csv"):
        assert (tmp_path / "report" / name).stat().st_size > 0, name


def _cell_runs(db):
    with sqlite3.connect(db, timeout=30) as con:
        return con.execute("SELECT r.run_uuid, r.status FROM runs r JOIN tags t ON t.run_uuid = r.run_uuid "
                           "WHERE t.key = 'ood_sweep.preset'").fetchall()


@pytest.mark.slow
def test_small_sweep_on_dask_writes_the_report_and_a_rerun_skips_every_cell(tmp_path, data_dir, shared_cache):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    out = tmp_path / "outputs"
    cmd = [sys.executable, str(ROOT / "train.py"), "-m", "experiment=ood_sweep_small", f"paths.data_dir={data_dir}",
           f"paths.cache_dir={shared_cache}", f"paths.outputs={out}", "hydra.launcher.n_workers=2"]
    first = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=3600)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "OOD sweep: mean test AUC" in first.stdout and "Next: python train.py experiment=ood_sweep_report" in first.stdout
    runs = _cell_runs(out / "mlflow.db")
    assert sorted(s for _, s in runs) == ["FINISHED", "FINISHED"]
    reports = list((out / "multirun").glob("*/*/report/ood_sweep_report.md")) + \
        list((out / "multirun").glob("*/report/ood_sweep_report.md"))
    assert len(reports) == 1
    cells = pd.read_csv(reports[0].parent / "cells.csv")
    logic = cells[(cells["preset"] == "ood_logic") & (cells["method"] == "latent")].set_index("k")
    assert sorted(logic.index) == [0, 30]
    assert (cells["cell_cpu_s"] > 0).all() and (cells["cell_s"] > 0).all()
    assert ((logic["auc"] > 0) & (logic["auc"] < 1)).all() and logic["band"].between(0, 1).all()
    # the latent assessor as served (train.py's trust verdict and fallback) next to the raw model
    served = cells[(cells["preset"] == "ood_logic") & (cells["method"] == "served")].set_index("k")
    assert sorted(served.index) == [0, 30] and served["fallback"].between(0, 1).all()
    assert ((served["auc"] > 0) & (served["auc"] < 1)).all()
    # scored on each hold-out's subtasks among the five (bbh_snarks is one of ood_language's too)
    assert {"ood_logic", "ood_language"} <= set(cells.loc[cells["preset"] == "in_distribution", "group"].dropna())

    again = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=3600)
    assert again.returncode == 0, again.stderr[-3000:]
    assert sorted(_cell_runs(out / "mlflow.db")) == sorted(runs)  # no cell ran again
    assert "OOD sweep: mean test AUC" in again.stdout


@pytest.mark.slow
def test_routerbench_leave_one_llm_out_tests_every_llm_once(compose):
    from assessors.tasks.ood_sweep import _cell_rows

    tiny = ["assessor=latent", "data.datasets=[mbpp]", "features=unigram", "features.max_features=200",
            "selector.size=30", "assessor.n_members=1", "assessor.hidden_sizes=[16]", "assessor.max_epochs=5",
            "assessor.residual_dims=8"]
    cfg = compose(["experiment=ood_sweep", "ood_sweep.preset=routerbench_loo", "ood_sweep.baselines.specific=false",
                   "ood_sweep.baselines.all_train_data=false", "ood_sweep.baselines.paper_generic=true", "tracking=none"])
    cfg.ood_sweep.overrides = tiny
    long, times = _cell_rows(cfg)
    assert set(long["method"]) == {"latent", "served", "reference_only", "paper_generic"}
    assert times["paper_generic_fit_s"] > 0
    assert long.loc[long["method"] == "served", "fallback"].between(0, 1).all()
    assert (long["k"] == 0).all() and (long["n_llms"] == 11).all()  # the 11 folds pooled, one test LLM each
    assert long["auc"].between(0, 1).all() and long["below_chance"].between(0, 1).all()
    assert long.loc[long["method"] == "latent", "band"].between(0, 1).all()
    assert times["latent_fit_s"] > 0 and times["prepare_s"] > 0


def test_served_band_is_the_served_tables_in_band_share():
    from assessors.tasks.ood_sweep_cell import served_band
    from assessors.tasks.served import Served, served_table

    rng = np.random.default_rng(0)
    llms = ["a", "b", "c", "d", "e"]
    S = (rng.random((5, 40)) < 0.6).astype(float)
    S[1, :5] = np.nan  # ungraded cells do not count towards the accuracy
    acc = np.nanmean(S, axis=1)
    trust = {"a": {"accuracy_band": [acc[0] - 0.1, acc[0] + 0.1]},                       # holds it
             "b": {"accuracy_band": [acc[1] + 0.01, 1.0]},                                # misses it
             "c": {"accuracy_band": [0.0, 1.0], "fallback": {"accuracy_band": [0.0, acc[2] - 0.01]}},  # the fallback's misses
             "d": {"accuracy_band": [None, None]},                                        # no band: not counted
             "e": None}
    served = Served(rng.random((5, 40)), {llm: "assessor" for llm in llms}, trust)
    table = served_table(served, served.P, S, llms)
    assert served_band(served, S, llms) == pytest.approx(table["in_band"].dropna().astype(float).mean())
    assert served_band(served, S, llms) == pytest.approx(1 / 3)
    assert np.isnan(served_band(Served(served.P, served.predictor, {}), S, llms))


@pytest.mark.slow
def test_the_cells_of_one_process_load_their_data_once(compose):
    from assessors.tasks.ood_sweep_cell import load_data

    cfg = compose(["data=routerbench", "data.datasets=[mbpp]"])
    first = load_data(cfg)
    assert load_data(compose(["data=routerbench", "data.datasets=[mbpp]", "seed=3"])) is first  # same data
    other = load_data(compose(["data=routerbench", "data.datasets=[winograde]"]))
    assert other is not first and set(other.instances["subgroup"].astype(str)) != set(first.instances["subgroup"].astype(str))
