"""The on-disk tier of the source-split cache: same estimates, keyed on sources only, atomic entries."""
import pickle

import numpy as np
import pandas as pd
import pytest

from assessors.estimation import harness
from assessors.estimation.benchmark import base, fit_cache, lasso
from assessors.estimation.benchmark.aipw import AIPW
from assessors.estimation.benchmark.anchor_points import AnchorPoints
from assessors.estimation.benchmark.irt import TinyBenchmarksIRT
from assessors.estimation.benchmark.lasso import LassoCore
from assessors.estimation.benchmark.latent_proxy import LatentProxy
from assessors.estimation.benchmark.pca import PCAImpute
from assessors.estimation.benchmark.random_sampling import RandomSampling
from tests.estimation.conftest import simulate

N_LLMS = 30
LLMS = [f"m{i}" for i in range(N_LLMS)]


def _estimators():
    return {"random_sampling": RandomSampling(), "lasso": LassoCore(), "pca": PCAImpute(),
            "gp_irt": TinyBenchmarksIRT(dims=2, core_seed=0, irt_params={"max_iter": 30}),
            "anchor": AnchorPoints(core_seed=0, max_items=None),
            "aipw_latent": AIPW(proxy=LatentProxy(dims=2, max_iter=30))}


def _run(S, cache, splits=("interpolation", "extrapolation"), first_trial=0, trials=2):
    """The harness's records without the timing columns, from an empty process cache."""
    base._CACHE.clear()
    df = harness.evaluate_benchmark("sim", S, LLMS, _estimators(), list(splits), [10, 20], trials=trials,
                                    first_trial=first_trial, progress=False, trials_per_split=2,
                                    fit_cache_dir=cache)
    return df.drop(columns=["fit_s", "estimate_s"])


@pytest.fixture(scope="module")
def S():
    return simulate(n_llms=N_LLMS, n_items=90, seed=7)[0].astype(np.float64)


def test_estimates_are_identical_with_and_without_the_disk_cache(S, tmp_path, monkeypatch):
    plain = _run(S, None)
    assert not any(tmp_path.iterdir())
    cold = _run(S, tmp_path)
    files = sorted(p.name for p in tmp_path.glob("*.pkl"))
    assert {f.split("-")[0] for f in files} >= {"lasso_path", "pca_svd", "irt_full", "irt_train", "irt_anchors",
                                               "gpirt_b", "anchor_core", "latent_proxy_irt"}
    # a later job (a new process: empty memory) on the same splits loads every fit and fits nothing
    paths = []
    real = lasso.lasso_path
    monkeypatch.setattr(lasso, "lasso_path", lambda *a, **k: paths.append(1) or real(*a, **k))
    warm = _run(S, tmp_path)
    assert paths == [] and sorted(p.name for p in tmp_path.glob("*.pkl")) == files
    pd.testing.assert_frame_equal(cold, plain)
    pd.testing.assert_frame_equal(warm, plain)


def test_the_extrapolation_split_is_fitted_once_across_blocks_of_trials(S, tmp_path, monkeypatch):
    paths = []
    real = lasso.lasso_path
    monkeypatch.setattr(lasso, "lasso_path", lambda *a, **k: paths.append(1) or real(*a, **k))
    first = _run(S, tmp_path, splits=("extrapolation",), first_trial=0, trials=2)
    second = _run(S, tmp_path, splits=("extrapolation",), first_trial=2, trials=4)
    assert len(paths) == 1 and set(second.trial) == {2, 3}
    base._CACHE.clear()
    paths.clear()
    alone = _run(S, None, splits=("extrapolation",), first_trial=2, trials=4)
    assert len(paths) == 1  # without the disk the second block refits
    pd.testing.assert_frame_equal(second, alone)
    assert set(first.trial) == {0, 1}


def test_entries_are_not_keyed_on_the_targets_answers(S, tmp_path):
    _run(S, tmp_path, splits=("interpolation",))
    files = sorted(p.name for p in tmp_path.glob("*.pkl"))
    _, tgt = harness.model_split(np.nanmean(S, 1), "interpolation", 0, trials_per_split=2)
    flipped = S.copy()
    flipped[tgt] = 1 - flipped[tgt]  # the targets answer otherwise: the sources' fits are the same
    _run(flipped, tmp_path, splits=("interpolation",))
    assert sorted(p.name for p in tmp_path.glob("*.pkl")) == files


def test_a_write_killed_midway_leaves_no_entry(tmp_path, monkeypatch):
    key = ("tag", "digest", (1,))
    real_dump = pickle.dump

    def killed(obj, fh, protocol=None):
        fh.write(b"half an entry")
        raise KeyboardInterrupt

    monkeypatch.setattr(fit_cache.pickle, "dump", killed)
    with fit_cache.disk_cache(tmp_path), pytest.raises(KeyboardInterrupt):
        fit_cache.load_or_fit(key, lambda: np.arange(3))
    assert not list(tmp_path.glob("*.pkl")) and not list(tmp_path.glob("*.tmp"))
    monkeypatch.setattr(fit_cache.pickle, "dump", real_dump)
    calls = []
    with fit_cache.disk_cache(tmp_path):
        first = fit_cache.load_or_fit(key, lambda: calls.append(1) or np.arange(3))
        again = fit_cache.load_or_fit(key, lambda: calls.append(1) or np.arange(3))
    assert calls == [1] and np.array_equal(first, again)
    # a file that is not a whole entry (e.g. copied in part) is refitted over, not returned
    fit_cache.entry_path(tmp_path, key).write_bytes(b"torn")
    with fit_cache.disk_cache(tmp_path):
        assert np.array_equal(fit_cache.load_or_fit(key, lambda: np.arange(3)), np.arange(3))
    assert pickle.loads(fit_cache.entry_path(tmp_path, key).read_bytes()).tolist() == [0, 1, 2]


def test_outside_a_disk_cache_block_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with fit_cache.disk_cache(None):
        assert fit_cache.load_or_fit(("t", "d", ()), lambda: 5) == 5
    assert fit_cache.load_or_fit(("t", "d", ()), lambda: 6) == 6
    assert not any(tmp_path.iterdir())


def test_the_task_keeps_fits_in_fit_cache_dir_only_when_set(S, tmp_path, monkeypatch):
    from omegaconf import OmegaConf

    from assessors.data.results import Results
    from assessors.tasks import benchmark_prediction as task
    from tests.estimation.test_harness import Recorder

    res = Results(instances=pd.DataFrame(index=[f"i{j}" for j in range(S.shape[1])]), llms=LLMS, success=S,
                  name="sim")
    monkeypatch.setattr(task, "load_benchmarks", lambda cfg: {"sim": res})
    B = "assessors.estimation.benchmark"
    cfg = OmegaConf.create({
        "estimators": {"random_sampling": {"_target_": f"{B}.random_sampling.RandomSampling"},
                       "lasso": {"_target_": f"{B}.lasso.LassoCore"}},
        "benchmark_prediction": {"splits": ["extrapolation"], "sizes": [10], "trials": 2, "main_size": 10,
                                 "target_fraction": 0.25, "benchmarks": {}, "progress": False, "n_jobs": 1,
                                 "log_records": False, "fit_cache_dir": str(tmp_path / "fits")}})
    base._CACHE.clear()
    task.execute(cfg, Recorder())
    assert len(list((tmp_path / "fits").glob("lasso_path-*.pkl"))) == 1
    other = Results(instances=res.instances, llms=LLMS, success=1 - S, name="sim")  # new sources: new keys
    monkeypatch.setattr(task, "load_benchmarks", lambda cfg: {"sim": other})
    base._CACHE.clear()
    task.execute(OmegaConf.merge(cfg, {"benchmark_prediction": {"fit_cache_dir": None}}), Recorder())
    assert len(list((tmp_path / "fits").glob("lasso_path-*.pkl"))) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fits"]


def test_source_digest_is_memoised_only_for_read_only_arrays(monkeypatch):
    """A split's read-only source matrix is hashed once for all its fits; a writeable one on every
    call, so a change made in place still gives a new key."""
    hashed = []
    real = base.array_digest
    monkeypatch.setattr(base, "array_digest", lambda a: hashed.append(1) or real(a))
    S, _ = simulate(n_llms=N_LLMS)
    unit = harness.split_rows(S, LLMS, np.arange(20), np.arange(20, N_LLMS))
    source = unit["source"]
    assert not source.flags.writeable and np.array_equal(source, S[:20])
    assert base._digest(source) == base._digest(source) == real(S[:20]) and len(hashed) == 1
    writeable = S[:20].copy()
    before = base._digest(writeable)
    writeable[0, 0] = 1 - writeable[0, 0]
    assert base._digest(writeable) != before and len(hashed) == 3
    held = len(base._DIGESTS)
    del unit, source
    assert len(base._DIGESTS) == held - 1  # the entry leaves with its array


def test_a_split_shares_one_read_only_imputed_and_float32_source():
    """The imputed and float32 copies of a read-only source are made once per split and equal the
    per-fit ones; a source without missing cells is its own imputation."""
    S, _ = simulate(n_llms=N_LLMS)
    S = S.copy()
    S[0, :5] = np.nan
    source = harness.split_rows(S, LLMS, np.arange(20), np.arange(20, N_LLMS))["source"]
    base._CACHE.clear()
    filled = base.imputed_source(source)
    assert base.imputed_source(source) is filled and not filled.flags.writeable
    np.testing.assert_array_equal(filled, base.impute_columns(source))
    f32 = base.source_float32(source)
    assert base.source_float32(source) is f32 and f32.dtype == np.float32 and not f32.flags.writeable
    np.testing.assert_array_equal(f32, source.astype(np.float32))
    full = np.nan_to_num(S[:20])
    assert base.imputed_source(full) is full and full.flags.writeable
