import numpy as np
import pandas as pd
import pytest
from omegaconf import OmegaConf

from assessors.data.results import Results
from assessors.tasks.subgroup import execute as _run
from assessors.estimation.subgroup.kmeans import KMeansSubgroups
from assessors.estimation.subgroup.sampling import allocation, draw_sample
from assessors.tracking import RunLogger


def test_allocation_is_proportional_with_minimum():
    n = allocation(np.array([250, 146, 1000, 8]), n_total=140, min_per_group=10)
    assert list(n) == [25, 15, 100, 8]  # proportional; the last is raised to 10, then capped at its size 8
    groups = np.repeat(np.arange(4), [250, 146, 1000, 8])
    idx = draw_sample(groups, n, np.random.default_rng(0))
    assert [len(i) for i in idx] == list(n) and all(len(set(i)) == len(i) for i in idx)
    assert all(np.all(groups[i] == g) for g, i in enumerate(idx))


def test_kmeans_subgroups_finds_blobs_and_merges_small_clusters():
    rng = np.random.default_rng(0)
    centres = rng.normal(0, 10, size=(4, 5))
    X = np.vstack([c + rng.normal(size=(60, 5)) for c in centres] + [centres[0] + 30 + rng.normal(size=(5, 5))])
    km = KMeansSubgroups(k_min=2, k_max=8, min_size=20).fit(X)
    sizes = np.bincount(km.labels_)
    assert sizes.min() >= 20
    assert len(sizes) == 4  # the 5-point blob is merged into a neighbour


def _results(tmp_path, n_llms=6, n_groups=12, per_group=40, seed=0):
    rng = np.random.default_rng(seed)
    skill = rng.normal(0, 1, n_llms)
    diff = rng.normal(0, 1, n_groups)
    groups = np.repeat([f"g{g:02d}" for g in range(n_groups)], per_group)
    p = 1 / (1 + np.exp(-(skill[:, None] - np.repeat(diff, per_group)[None, :])))
    success = (rng.random(p.shape) < p).astype(np.float32)
    inst = pd.DataFrame({"prompt": [f"{g} item {i}" for i, g in enumerate(groups)], "subgroup": groups,
                         "target": "x"}, index=[f"i{i}" for i in range(len(groups))])
    path = tmp_path / "res"
    Results(inst, [f"llm{i}" for i in range(n_llms)], success, name="toy").to_parquet(path)
    return path


def test_harness_reports_metrics_plot_and_table(tmp_path):
    path = _results(tmp_path)
    cfg = OmegaConf.create({
        "seed": 0,
        "data": {"_target_": "assessors.data.results.Results.from_parquet", "path": str(path)},
        "features": {"_target_": "assessors.features.ngrams.UnigramFeaturizer"},
        "subgroup": {
            "repeats": 3, "n_total": 60, "min_per_group": 4, "size_threshold": 4, "subgroups": "column",
            "progress": False, "assessor_mean_path": None, "forest_llm": None,
            "reference": {"coverage_eb": {"target": ">= 0.90"}},
            "direct": {"_target_": "assessors.estimation.subgroup.direct.DirectEstimator"},
            "eb": {"_target_": "assessors.estimation.subgroup.empirical_bayes.EmpiricalBayes", "kappa": float("inf"),
                   "scope": "auto",
                   "regressor": {"_target_": "assessors.estimation.subgroup.regression.SyntheticRegression",
                                 "n_components": 3, "xgb_params": {"n_estimators": 20}}},
        },
    })
    run = RunLogger()
    m = _run(cfg, run)
    for key in ("mse_dt", "mse_sr", "mse_eb", "coverage_eb", "width_eb", "mse_ratio_eb_dt", "mse_dt_large"):
        assert np.isfinite(m[key]), key
    assert m["n_subgroups"] == 12 and m["repeats"] == 3
    assert 0 < m["coverage_dt"] <= 1
    assert {"plots/forest_dt_vs_eb.png", "tables/subgroup_metrics.csv", "report.md"} <= set(run.artifacts)
    assert len(run.artifacts["tables/subgroup_metrics.csv"]) == 12
    assert "| EB |" in run.artifacts["report.md"]
    assert f"| coverage_eb | {m['coverage_eb']:.3f} | >= 0.90 |" in run.artifacts["report.md"]  # configured reference
    shares = {k: v for k, v in m.items() if k.startswith("scope_share_")}  # what scope="auto" picked per repeat
    assert set(shares) <= {"scope_share_llm", "scope_share_factor_binomial"} and sum(shares.values()) == pytest.approx(1)
    assert "EB's scope per repeat: " in run.artifacts["report.md"]


@pytest.mark.slow
def test_harness_on_bbh_musr_runs(tmp_path):
    # Real data, few repeats, LLM intercepts only (no embedding model needed).
    import os

    if not os.environ.get("ASSESSORS_DATA_DIR"):
        pytest.skip("ASSESSORS_DATA_DIR not set")
    cfg = OmegaConf.create({
        "seed": 0, "features": None,
        "data": {"_target_": "assessors.data.loaders.open_llm_leaderboard_v2.load_open_llm_leaderboard_v2"},
        "subgroup": {"repeats": 2, "n_total": 420, "min_per_group": 10, "size_threshold": 15,
                     "subgroups": "column", "progress": False,
                     "direct": {"_target_": "assessors.estimation.subgroup.direct.DirectEstimator"},
                     "eb": {"_target_": "assessors.estimation.subgroup.empirical_bayes.EmpiricalBayes",
                            "regressor": {"_target_": "assessors.estimation.subgroup.regression.SyntheticRegression"}}},
    })
    m = _run(cfg, RunLogger())
    assert m["n_llms"] == 77 and m["n_subgroups"] == 27
    assert m["mse_eb"] < m["mse_dt"]


@pytest.mark.slow
def test_harness_with_the_latent_prior_and_a_sample_as_large_as_the_data(tmp_path):
    from assessors.errors import ConfigError

    path = _results(tmp_path, n_llms=8)
    sub = {"repeats": 2, "n_total": 96, "min_per_group": 8, "size_threshold": 8, "subgroups": "column",
           "progress": False, "prior_sources": "full",
           "direct": {"_target_": "assessors.estimation.subgroup.direct.DirectEstimator"},
           "eb": {"_target_": "assessors.estimation.subgroup.empirical_bayes.EmpiricalBayes", "kappa": float("inf"),
                  "regressor": {"_target_": "assessors.estimation.subgroup.latent_prior.LatentPrior", "llm_folds": 4,
                                "proxy": {"_target_": "assessors.estimation.benchmark.latent_proxy.LatentProxy",
                                          "dims": 1, "max_iter": 40}}}}
    cfg = OmegaConf.create({"seed": 0, "features": None, "subgroup": sub,
                            "data": {"_target_": "assessors.data.results.Results.from_parquet", "path": str(path)}})
    m = _run(cfg, RunLogger())
    assert np.isfinite(m["mse_sr"]) and m["mse_eb"] < m["mse_dt"]
    cfg.subgroup.n_total, cfg.subgroup.min_per_group = 1000, 40  # every subgroup would be sampled whole
    with pytest.raises(ConfigError, match="sampled whole"):
        _run(cfg, RunLogger())


def test_join_on_llms_keeps_shared_llms_and_each_part_s_subgroups():
    from assessors.errors import DataError
    from assessors.estimation.subgroup.harness import join_on_llms

    def part(name, llms, n_items, seed):
        rng = np.random.default_rng(seed)
        inst = pd.DataFrame({"subgroup": name}, index=[f"{name}/{j}" for j in range(n_items)])
        return Results(inst, llms, (rng.random((len(llms), n_items)) < 0.5).astype(np.float32), name=name)

    a = part("a", ["m1", "m2", "m3", "m4"], 5, 0)
    b = part("b", ["m4", "m3", "m2", "x"], 7, 1)
    j = join_on_llms([a, b])
    assert j.llms == ["m2", "m3", "m4"] and j.shape == (3, 12)
    assert list(j.instances["subgroup"].unique()) == ["a", "b"]
    assert np.array_equal(j.matrix(["m3"], ["b/2"]), b.matrix(["m3"], ["b/2"]))  # rows follow the names
    with pytest.raises(DataError, match="instance id 'a/0' is in two parts"):
        join_on_llms([a, a])
    with pytest.raises(DataError, match="only 1 LLMs are in every part"):
        join_on_llms([a, part("c", ["m1", "y", "z"], 3, 2)])


@pytest.mark.slow
def test_harness_on_the_joined_leaderboard_matrices():
    # The second real data set with subgroups: MuSR's subtasks + IFEval, MATH-hard and ARC on their shared LLMs.
    import os

    from hydra import compose, initialize_config_dir

    if not os.environ.get("ASSESSORS_DATA_DIR"):
        pytest.skip("ASSESSORS_DATA_DIR not set")
    conf = os.path.join(os.path.dirname(__file__), "..", "..", "..", "conf")
    with initialize_config_dir(config_dir=os.path.abspath(conf), version_base="1.3"):
        cfg = compose("train", overrides=["experiment=subgroup_eb", "data=score_matrix_musr", "subgroup.repeats=2",
                                          "subgroup.join=${subgroup.join_sets.leaderboard}", "subgroup.progress=false"])
    m = _run(cfg, RunLogger())
    assert m["n_llms"] == 208 and m["n_subgroups"] == 6
    assert m["mse_eb"] < m["mse_dt"]
