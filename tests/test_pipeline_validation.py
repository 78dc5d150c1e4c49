"""A grading failure planted in real results: the run leaves it out of the headline and says so."""
from __future__ import annotations

import numpy as np
import pytest
from mlflow.tracking import MlflowClient

from assessors.data.loaders.open_llm_leaderboard_v2 import load_open_llm_leaderboard_v2
from assessors.errors import DataError
from assessors.tasks.train import train_assessors

# real-data training runs end to end: the slow tier
pytestmark = pytest.mark.slow

SUBTASKS = ["bbh_navigate", "bbh_snarks", "bbh_sports_understanding", "bbh_web_of_lies"]
SMALL = [
    "data=table", "features=success_pattern", "assessor=paper_generic",
    "classifier.param_grid.n_estimators=[30]", "paper_generic_classifier.param_grid.n_estimators=[30]", "classifier.param_grid.max_depth=[2]",
    "specific.classifiers.xgboost.param_grid.n_estimators=[20]", "selector.size=20",
    "llm_split.n_train=30", "llm_split.n_val=6", "llm_split.n_test=6",
    "compare.reference_only=false", "compare.random_selector=false", "plots=false", "tracking.log_model=false",
]


@pytest.fixture(scope="module")
def planted(data_dir, tmp_path_factory):
    """Real results of 4 BBH subtasks in the table format; on web_of_lies all LLMs but one score 0."""
    res = load_open_llm_leaderboard_v2(root=data_dir, subtasks=SUBTASKS, prompts=False)
    bad = (res.instances["subgroup"] == "bbh_web_of_lies").to_numpy()
    S = res.success.copy()
    S[:, bad] = np.where(np.isnan(S[:, bad]), np.nan, 0.0)
    S[0, np.flatnonzero(bad)[:3]] = 1.0  # one LLM with a few successes: not perfectly constant
    res.success = S
    long = res.to_long()
    long["subgroup"] = res.instances.loc[long["instance_id"], "subgroup"].to_numpy()
    path = tmp_path_factory.mktemp("planted") / "results.csv"
    long.to_csv(path, index=False)
    return path


def test_flagged_dataset_is_excluded_and_named(compose, planted, capsys):
    cfg = compose(SMALL + [f"data.results_path={planted}"])
    summary = train_assessors(cfg)
    out = capsys.readouterr().out
    assert "EXCLUDED from training and headline metrics: datasets ['bbh_web_of_lies']" in out
    client = MlflowClient(tracking_uri=f"sqlite:///{cfg.tracking.db_path}")
    (run,) = client.search_runs([client.get_experiment_by_name(cfg.tracking.experiment).experiment_id])
    assert run.data.tags["validate.excluded_datasets"] == "bbh_web_of_lies"
    assert run.data.metrics["validate.mostly_constant_dataset"] == 1.0
    report = client.download_artifacts(run.info.run_id, "validate/report.txt")
    assert "EXCLUDED" in open(report).read()
    assert 0 <= summary["auc/headline"] <= 1


def test_strict_makes_it_an_error_and_exclude_false_says_included(compose, planted, capsys):
    with pytest.raises(DataError, match="mostly_constant_dataset.*bbh_web_of_lies"):
        train_assessors(compose(SMALL + [f"data.results_path={planted}", "validate.strict=true"]))
    train_assessors(compose(SMALL + [f"data.results_path={planted}", "validate.exclude=false",
                                     "tracking.experiment=included"]))
    assert "INCLUDED although flagged" in capsys.readouterr().out
