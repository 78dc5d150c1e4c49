"""Grid jobs: config hash, one combination end to end, skip-if-finished, stale-run cleanup, report."""
from __future__ import annotations

import socket
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hydra.utils import instantiate

from assessors.tasks.grid import run_grid
from assessors.grid.resume import TAG_HASH, TAG_HOST, TAG_PID, config_hash, finished_run

PRESETS = ["paper_in_distribution", "ood_algorithmic", "ood_language", "ood_logic", "ood_musr", "llm_random",
           "llm_frontier", "kor_llm_split"]


@pytest.mark.parametrize("preset", PRESETS)
def test_presets_compose_to_the_grid_task(compose, preset):
    cfg = compose([f"experiment={preset}"])
    assert cfg.task._target_ == "assessors.tasks.grid.run_grid"
    assert cfg.grid.split_name
    if preset.startswith("ood_"):
        assert cfg.split._target_.endswith("HoldoutGroupsSplit") and preset[4:] in str(cfg.grid.split_name)
    if preset == "kor_llm_split":
        assert cfg.data._target_.endswith("load_openai_evals") and "gpt-4-0314" in list(cfg.llm_split.test)


def test_preset_sweeps_the_full_grid(compose):
    from hydra import compose as hc
    from hydra import initialize_config_dir

    from tests.conftest import CONF

    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = hc("train", overrides=["experiment=paper_in_distribution"], return_hydra_config=True)
    params = cfg.hydra.sweeper.params
    assert len(params.selector.split(",")) == 8 and len(params.classifier.split(",")) == 4
    assert params["selector.size"] == "30,100,300,1000"
    assert len(params["assessor.instance_features"].split(",")) == 3
    for sel in params.selector.split(","):
        assert (CONF / "selector" / f"{sel}.yaml").exists()


def test_config_hash_ignores_paths_but_not_the_combination(tiny, tmp_path):
    a = tiny("selector.size=10")
    b = tiny("selector.size=10", f"paths.cache_dir={tmp_path}/other", "tracking=none")
    c = tiny("selector.size=11")
    assert config_hash(a) == config_hash(b) != config_hash(c)


def test_run_grid_logs_per_llm_aucs_and_skips_when_finished(tiny, tmp_path):
    import mlflow

    cfg = tiny("selector=kmeans_successes", "selector.size=10")
    first = run_grid(cfg)
    assert first["skipped"] == 0.0 and 0.5 < first["val_auc_mean"] <= 1.0
    tracker = instantiate(cfg.tracking)
    run = finished_run(tracker, config_hash(cfg))
    assert run is not None
    val = {k: v for k, v in run.data.metrics.items() if k.startswith("val_auc/")}
    test = {k: v for k, v in run.data.metrics.items() if k.startswith("test_auc/")}
    assert len(val) == 10 and len(test) == 18
    assert np.isclose(np.mean(list(val.values())), first["val_auc_mean"])
    ids = mlflow.artifacts.load_dict(f"runs:/{run.info.run_id}/reference_ids.json")["reference_ids"]
    assert len(ids) == 10
    again = run_grid(cfg)
    assert again["skipped"] == 1.0 and again["val_auc_mean"] == pytest.approx(first["val_auc_mean"])
    n = len(mlflow.search_runs(experiment_names=[tracker.experiment]))
    assert n == 1, "a finished combination must not be re-run"
    # the selector was fitted once: its reference ids are memoised on disk
    assert list((Path(cfg.paths.cache_dir) / "selection" / "reference_ids").glob("*.npz"))


@pytest.mark.slow
def test_stale_running_run_of_a_dead_process_is_marked_killed(tiny):
    from mlflow.tracking import MlflowClient

    cfg = tiny("selector=random", "selector.size=10")
    tracker = instantiate(cfg.tracking)
    mlflow = tracker._setup()
    h = config_hash(cfg)
    dead = 2 ** 22 + 12345  # beyond the default pid_max on this machine: no such process
    # a run left RUNNING, as a SIGKILLed job leaves it (create_run does not end it)
    exp = mlflow.get_experiment_by_name(tracker.experiment)
    run_id = MlflowClient().create_run(exp.experiment_id, tags={TAG_HASH: h, TAG_PID: str(dead),
                                                                TAG_HOST: socket.gethostname()}).info.run_id
    assert MlflowClient().get_run(run_id).info.status == "RUNNING"
    assert finished_run(tracker, h) is None
    assert MlflowClient().get_run(run_id).info.status == "KILLED"
    assert run_grid(cfg)["skipped"] == 0.0


@pytest.mark.slow
def test_report_picks_the_win_rate_winner_and_writes_tables(tiny, tmp_path):
    from assessors.grid.report import build_report, choose_winner, load_grid_runs
    from assessors.metrics import win_rates

    for sel, size in [("random", 10), ("kmeans_successes", 10), ("factor_analysis_successes", 10), ("random", 20)]:
        cfg = tiny(f"selector={sel}", f"selector.size={size}")
        run_grid(cfg)
    # one cell re-run after its classifier config changed: a new hash, but the report keeps the newest only
    rerun = tiny("selector=random", "selector.size=10", "classifier.param_grid.C=[0.5]")
    assert config_hash(rerun) != config_hash(tiny("selector=random", "selector.size=10"))
    run_grid(rerun)
    tracker = instantiate(cfg.tracking)
    runs = load_grid_runs(tracker)
    assert len(runs) == 4
    newest = finished_run(tracker, config_hash(rerun)).info.run_id
    assert newest in set(runs.run_id)  # and the run it replaced is gone (4 rows)
    winner, ranking = choose_winner(runs)
    cols = [c for c in runs if c.startswith("metrics.val_auc/")]
    wr = win_rates(runs[cols])
    assert wr[runs.index[runs.run_id == winner.run_id][0]] == wr.max()
    report = build_report(tracker, tmp_path / "report", baselines=False)
    text = report.read_text()
    assert "Table 2/5" in text and "in_distribution" in text
    assert (tmp_path / "report" / "in_distribution" / "fig6_auc_vs_size.png").exists()
    t2 = pd.read_csv(tmp_path / "report" / "table2_winners.csv")
    assert t2.loc[0, "selector"] == winner["selector"]


@pytest.mark.slow
def test_report_with_baselines_compares_winner_to_specific_and_baselines(tiny, tmp_path):
    from assessors.grid.report import build_report

    for sel in ("random", "kmeans_successes"):
        run_grid(tiny(f"selector={sel}", "selector.size=10"))
    cfg = tiny()
    from assessors.tasks.grid import winner_vs_baselines

    report = build_report(instantiate(cfg.tracking), tmp_path / "rep", baselines=winner_vs_baselines)
    text = report.read_text()
    # "random_selector" is a column only where the winner's selector is not random itself
    for method in ("generic", "specific", "all_train_data", "reference_only"):
        assert method in text
    assert (tmp_path / "rep" / "in_distribution" / "fig4_auc_per_llm.png").exists()


@pytest.mark.slow
def test_infeasible_combination_is_recorded_skipped_on_restart_and_listed_not_ranked(tiny, tmp_path):
    """A selector that cannot pick a reference set on the data must not stop the rest of the sweep."""
    from assessors.grid.resume import TAG_INFEASIBLE
    from assessors.grid.report import build_report

    bad = tiny("selector=random", "selector.size=100000")
    out = run_grid(bad)
    assert out["infeasible"] == 1.0 and np.isnan(out["val_auc_mean"])
    tracker = instantiate(bad.tracking)
    run = finished_run(tracker, config_hash(bad))
    assert run is not None and "100000" in run.data.tags[TAG_INFEASIBLE]
    again = run_grid(bad)
    assert again["skipped"] == 1.0 and again["infeasible"] == 1.0  # deterministic: not re-tried
    good = run_grid(tiny("selector=random", "selector.size=10"))
    assert good["infeasible"] == 0.0
    text = build_report(tracker, tmp_path / "report", baselines=False).read_text()
    assert "1 finished combinations" in text and "infeasible on this data" in text and "100000" in text
    t2 = pd.read_csv(tmp_path / "report" / "table2_winners.csv")
    assert t2.loc[0, "size"] == 10


def test_a_mistyped_option_fails_the_job_instead_of_being_recorded_infeasible(tiny):
    """An out-of-range option is the user's mistake, not a limit of the data: the job must fail."""
    from assessors.errors import ConfigError, InfeasibleError

    bad = tiny("selector=random", "selector.size=0")
    with pytest.raises(ConfigError, match="must be >= 1") as err:
        run_grid(bad)
    assert not isinstance(err.value, InfeasibleError)
    assert finished_run(instantiate(bad.tracking), config_hash(bad)) is None  # not recorded as a finished cell


@pytest.mark.slow
def test_run_grid_with_the_latent_assessor(compose):
    """``assessor=latent`` is a grid option: its coordinate replaces the classifier's."""
    from tests.grid.conftest import TINY
    from assessors.tasks.grid import combination

    cfg = compose([o for o in TINY if not o.startswith("assessor.")] + [
        "assessor=latent", "selector.size=10", "assessor.n_members=1", "assessor.hidden_sizes=[8]",
        "assessor.max_epochs=4", "assessor.residual_dims=4"])
    assert combination(cfg)["classifier"] == "LatentAssessor"
    out = run_grid(cfg)
    assert out["skipped"] == 0.0 and 0.5 < out["val_auc_mean"] <= 1.0
