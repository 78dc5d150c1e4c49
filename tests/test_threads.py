"""The thread budget: one rule for how many threads each fit gets (assessors/threads.py)."""
from __future__ import annotations

import os

import pytest
from hydra.utils import instantiate
from omegaconf import OmegaConf

from assessors.threads import available_cores, budgeted, current_budget, fit_threads, thread_limits


def test_budget_divides_the_cores_among_parallel_fits(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    cores = len(os.sched_getaffinity(0))
    assert available_cores() == cores
    assert fit_threads(1) == cores and fit_threads(2) == max(1, cores // 2) and fit_threads(64) == 1
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # what Ray or a scheduler sets for a 1-CPU task
    assert available_cores() == 1 and fit_threads(1) == 1
    assert fit_threads(2, 3) == 3  # a fixed setting wins


def test_every_thread_setting_of_a_component_config_is_set(compose):
    cfg = compose(["assessor=paper_generic"])
    spec = budgeted(cfg.specific, 1)
    assert spec["n_jobs"] == 1 and spec["classifiers"]["xgboost"]["estimator"]["n_jobs"] == 1
    assessor = instantiate(budgeted(cfg.assessor, 3))
    est = assessor.classifier.estimator
    assert est.get_params()["n_jobs"] == 3
    assert OmegaConf.select(cfg, "classifier.estimator.n_jobs") is None  # the config itself is left alone
    feats = budgeted(compose(["features=sentence_transformer"]).features, 2)
    assert feats["num_threads"] == 2 and budgeted(None, 2) is None
    assert budgeted({"a": [{"n_jobs": 8}], "b": 1}, 2) == {"a": [{"n_jobs": 2}], "b": 1}


def test_the_budget_caps_an_explicit_setting_and_fills_an_unset_one(compose):
    assert budgeted({"n_jobs": None, "x": {"num_threads": -1}, "nthread": 1}, 4) == \
        {"n_jobs": 4, "x": {"num_threads": 4}, "nthread": 1}
    # the latent assessor asks for one torch thread: a 2-thread budget must not raise it
    latent = instantiate(budgeted(compose(["assessor=latent"]).assessor, 2))
    assert latent.num_threads == 1


def test_thread_limits_cap_blas_and_torch():
    import numpy as np  # noqa: F401 (loads the BLAS library threadpoolctl limits)
    import torch
    from threadpoolctl import threadpool_info

    before = torch.get_num_threads()
    with thread_limits(1):
        assert current_budget() == 1 and torch.get_num_threads() == 1
        assert all(p["num_threads"] == 1 for p in threadpool_info())
    assert current_budget() is None and torch.get_num_threads() == before


@pytest.mark.parametrize("llm_jobs", [1, 2])
def test_per_llm_fits_get_their_share(compose, monkeypatch, llm_jobs):
    """fit_per_llm builds each specific assessor with fit_threads(llm_jobs) threads per XGBoost fit."""
    import numpy as np

    from assessors.tasks import train as pipeline
    from assessors.core.specific import LLMClassifier

    seen = []

    def record(self, X, y, X_val=None, y_val=None, bins=None):
        seen.append({name: est.get_params().get("n_jobs") for name, est in self._candidates()})
        self.classifier_name_ = "x"
        return self

    monkeypatch.setattr(LLMClassifier, "fit", record)
    monkeypatch.setattr(LLMClassifier, "predict_proba", lambda self, X: np.zeros(len(X), np.float32))
    cfg = compose([f"llm_jobs={llm_jobs}"])

    class Prep:
        class results:
            success = np.zeros((2, 6), np.float32)
            llms = ["a", "b"]
            instance_index = staticmethod(lambda ids: np.arange(len(ids)))
            llm_index = staticmethod(lambda names: np.array([0]))
        inst = {"train": ["1", "2"], "val": ["3", "4"]}
        llms = {"test": ["a", "b"]}
        X = {"train": np.zeros((2, 3)), "val": np.zeros((2, 3)), "test": np.zeros((2, 3))}

    pipeline.fit_per_llm(cfg, Prep, "specific", np.zeros((0, 3)), np.array([], int))
    xgb = [v for s in seen for k, v in s.items() if "XGB" in k]
    assert xgb and set(xgb) == {fit_threads(llm_jobs)}


def test_a_joblib_sweep_shares_the_cores_among_its_jobs(monkeypatch):
    from hydra import compose, initialize_config_dir
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode
    from omegaconf import open_dict

    from assessors.tasks.config import sweep_jobs
    from assessors.threads import set_outer_jobs
    from tests.conftest import CONF

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("train", overrides=["hydra/launcher=joblib_local", "hydra.launcher.n_jobs=2"],
                      return_hydra_config=True)
    with open_dict(cfg):
        cfg.hydra.mode = RunMode.MULTIRUN
    cores = len(os.sched_getaffinity(0))
    try:
        HydraConfig.instance().set_config(cfg)
        assert sweep_jobs() == 2  # the task layer reads the launcher ...
        set_outer_jobs(sweep_jobs())  # ... and tells the thread budget (as run_task does)
        assert available_cores() == max(1, cores // 2)
    finally:
        HydraConfig.instance().cfg = None
        set_outer_jobs(1)
    assert sweep_jobs() == 1 and available_cores() == cores


def _pools() -> dict:
    """Thread counts of the BLAS pools (process-wide), this thread's OpenMP pools, and torch."""
    import torch
    from threadpoolctl import threadpool_info

    return {"blas": sorted({p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"}),
            "openmp": sorted({p["num_threads"] for p in threadpool_info() if p["user_api"] == "openmp"}),
            "torch": torch.get_num_threads()}


def test_two_threads_open_and_close_blocks_at_once_inside_lane_limits():
    """Each thread sees its own budget; the process-wide pools stay at the lanes' until lane_limits closes."""
    import threading

    import numpy as np  # noqa: F401 (loads the BLAS library threadpoolctl limits)
    import torch  # noqa: F401

    from assessors.threads import lane_limits

    before, seen, errors = _pools(), {}, []
    barrier = threading.Barrier(2, timeout=10)

    def lane(name: str, n: int):
        try:
            assert current_budget() == 1  # a new thread starts at the lanes' budget
            with thread_limits(n):
                barrier.wait()  # both blocks open at once
                seen[name, "in"] = current_budget(), _pools()
                barrier.wait()
                if name == "a":
                    barrier.wait()  # b has closed its block; a's is still open
                    seen[name, "after_b"] = current_budget(), _pools()
            if name == "b":
                barrier.wait()
            seen[name, "out"] = current_budget()
        except BaseException as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    with thread_limits(2):
        with lane_limits(1):
            assert current_budget() == 1 and _pools()["blas"] == [1] and _pools()["torch"] == 1
            threads = [threading.Thread(target=lane, args=("a", 3)), threading.Thread(target=lane, args=("b", 1))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(20)
            assert current_budget() == 1
        assert current_budget() == 2
    assert not errors, errors
    for key in (("a", "in"), ("b", "in"), ("a", "after_b")):
        budget, pools = seen[key]
        assert budget == 1 and pools == {"blas": [1], "openmp": [1], "torch": 1}, key  # capped at the lanes'
    assert seen["a", "out"] == seen["b", "out"] == 1
    assert current_budget() is None and _pools() == before


def test_an_error_inside_the_blocks_propagates_and_restores_the_limits():
    import numpy as np  # noqa: F401
    import torch  # noqa: F401

    from assessors.threads import lane_limits

    before = _pools()
    with pytest.raises(KeyError, match="broke"):
        with lane_limits(1), thread_limits(1):
            raise KeyError("broke")
    with pytest.raises(RuntimeError, match="do not nest"):
        with lane_limits(1), lane_limits(1):
            pass
    assert current_budget() is None and _pools() == before


@pytest.mark.parametrize("omp", ["1", None])
def test_the_original_limits_are_restored_in_a_process_started_with_omp_num_threads(omp):
    """In a fresh process (OpenMP reads OMP_NUM_THREADS when it loads): train.py's nesting, lanes and all."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import json, numpy, torch
        from threadpoolctl import threadpool_info
        from assessors.tasks.lanes import run_lanes
        from assessors.threads import current_budget, lane_limits, thread_limits
        pools = lambda: (sorted((p["user_api"], p["num_threads"]) for p in threadpool_info()), torch.get_num_threads())
        before = pools()
        def side():
            yield lambda: (current_budget(), pools())
            yield lambda: (current_budget(), pools())
        with thread_limits(2), lane_limits(1):
            main, items = run_lanes(lambda: (current_budget(), pools()), side)
        print(json.dumps({"before": before, "after": pools(), "lanes": [main, *items]}))
    """)
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    if omp:
        env["OMP_NUM_THREADS"] = omp
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, check=True)
    import json

    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["after"] == got["before"]
    for budget, (pools, torch_threads) in got["lanes"]:
        assert budget == 1 and torch_threads == 1 and {n for _, n in pools} == {1}
