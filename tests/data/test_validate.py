"""Data validation: constructed Results with known problems, strictness, leakage, a real loader."""
import numpy as np
import pandas as pd
import pytest

from assessors.data.results import Results
from assessors.data.validate import check_leakage, check_results, run_validation, validate_split
from assessors.errors import DataError
from assessors.tracking import RunLogger


def _results():
    rng = np.random.default_rng(0)
    ids = [f"a{i}" for i in range(20)] + [f"b{i}" for i in range(20)]
    inst = pd.DataFrame({"prompt": [f"question {i}" for i in range(40)], "subgroup": ["a"] * 20 + ["b"] * 20},
                        index=ids)
    inst.loc["a1", "prompt"] = inst.loc["a0", "prompt"]  # one duplicated prompt text
    S = (rng.random((6, 40)) < 0.5).astype(np.float32)
    S[:, 20:] = 0  # dataset b: everyone fails (a grading failure)
    S[1, :20] = 1  # m1 constant on dataset a
    S[3] = S[2]  # m2 and m3 identical (and not constant)
    S[4, :30] = np.nan  # m4 mostly missing
    S[:, 5] = np.nan  # instance a5 missing everywhere
    llms = ["m0", "m1", "m2", "m3", "m4", "m0#2"]
    return Results(instances=inst, llms=llms, success=S, name="toy")


def test_constructed_issues_are_found_with_counts_and_names():
    res = _results()
    rep = check_results(res, {"identical_min_cells": 10})
    c = rep.counts()
    assert c["constant_dataset"] == 1 and rep.issues[[i.check for i in rep.issues].index("constant_dataset")].names[0][:2] == ["b", 0]
    const = next(i for i in rep.issues if i.check == "constant_llm")
    pairs = {(n[0], n[1]) for n in const.names}
    assert ("m1", "a") in pairs and ("m0", "b") in pairs
    assert c["constant_llm"] == 7  # 6 LLMs on b (m4 too: 10 answered) + m1 on a
    assert next(i for i in rep.issues if i.check == "conflicting_duplicates").names == [["m0", "m0#2"]]
    assert next(i for i in rep.issues if i.check == "identical_llms").names == [["m2", "m3"]]
    assert next(i for i in rep.issues if i.check == "missing_llm").names == [["m4", 0.75]]
    assert next(i for i in rep.issues if i.check == "missing_instance").names == [["a5", 1.0]]
    assert next(i for i in rep.issues if i.check == "duplicate_prompts").names == [["a0", "a1"]]


def test_clean_data_has_no_issues():
    rng = np.random.default_rng(1)
    S = (rng.random((5, 60)) < 0.5).astype(np.float32)
    inst = pd.DataFrame({"prompt": [f"q{i}" for i in range(60)], "subgroup": "x"}, index=[str(i) for i in range(60)])
    assert check_results(Results(inst, [f"m{i}" for i in range(5)], S)).issues == []


def test_strictness_and_nothing_dropped(caplog):
    res = _results()
    before = res.success.copy()
    rep = run_validation(res, {"strict": False})
    assert np.array_equal(res.success, before, equal_nan=True) and res.shape == (6, 40)
    assert res.meta["validation"]["issues"] and "constant_dataset" in caplog.text
    with pytest.raises(DataError, match="constant_dataset"):
        run_validation(res, {"fail_on": ["constant_dataset"]})
    with pytest.raises(DataError, match="strict"):
        run_validation(res, {"strict": True})
    assert len(rep.issues) == 7  # identical_llms needs 50 cells by default; m4 has too few cells


def test_check_leakage_exact_and_near_duplicates():
    rng = np.random.default_rng(2)
    A = rng.normal(size=(50, 16))
    B = rng.normal(size=(10, 16))
    B[0] = A[3]  # exact
    B[1] = A[7] + 0.01 * rng.normal(size=16)  # near
    out = check_leakage(A, B, [f"tr{i}" for i in range(50)], [f"te{i}" for i in range(10)], threshold=0.98,
                        train_texts=[f"t{i}" for i in range(50)], test_texts=["t3"] + [f"x{i}" for i in range(9)])
    assert out[["test_id", "train_id"]].values.tolist() == [["te0", "tr3"], ["te1", "tr7"]]
    assert out["exact_text"].tolist() == [True, False]
    with pytest.raises(DataError, match="train rows"):
        check_leakage(A, B, ["x"], [f"te{i}" for i in range(10)])


def test_validate_prepared_logs_leakage():
    res = _results()
    run_validation(res)
    X = np.random.default_rng(3).normal(size=(40, 8)).astype(np.float32)
    X[20] = X[0]
    inst = {"train": res.instance_ids[:20], "val": [], "test": res.instance_ids[20:]}
    run = RunLogger()
    rep = validate_split(res, inst, {}, {"train": X[:20], "val": X[:0], "test": X[20:]}, {"near_duplicate": 0.99}, run)
    assert rep.counts()["leakage"] == 1 and run.metrics["validate.leakage"] == 1.0
    assert "validate/leakage.csv" in run.artifacts and run.metrics["validate.n_issues"] == 8  # 7 + leakage


def test_real_openai_evals_text_models_are_constant(data_dir):
    from assessors.data.loaders.openai_evals import load_openai_evals

    res = load_openai_evals(root=data_dir, cache_dir=None, datasets=["causal_judgment"])
    rep = check_results(res)
    const = next(i for i in rep.issues if i.check == "constant_llm")
    names = {n[0] for n in const.names}
    assert {"text-ada-001", "text-davinci-003"} <= names and all(n[2] == 0 for n in const.names)
    assert "constant_dataset" not in rep.counts()  # gpt-4 models succeed sometimes


def _grading_failure(n_llms=14, seed=3):
    """Dataset ``good`` with varied results; ``bad``: all but one LLM score 0, one scores ~3%."""
    rng = np.random.default_rng(seed)
    ids = [f"g{i}" for i in range(60)] + [f"b{i}" for i in range(60)]
    inst = pd.DataFrame({"prompt": [f"q {i}" for i in range(120)], "subgroup": ["good"] * 60 + ["bad"] * 60},
                        index=ids)
    S = (rng.random((n_llms, 120)) < 0.6).astype(np.float32)
    S[:, 60:] = 0
    S[0, 60:62] = 1  # one LLM at 2/60 = 3%
    return Results(instances=inst, llms=[f"m{i}" for i in range(n_llms)], success=S, name="gf")


def test_mostly_constant_dataset_is_named_and_excluded_by_default(caplog):
    from assessors.data.exclusion import exclude_flagged, excluded_summary

    res = _grading_failure()
    rep = run_validation(res, {})
    issue = next(i for i in rep.issues if i.check == "mostly_constant_dataset")
    assert issue.names == [["bad", 13, 14, 0.0024]] and "constant_dataset" not in rep.counts()
    assert rep.flagged == {"datasets": ["bad"]}
    out = exclude_flagged(res, rep, {})
    assert out.shape == (14, 60) and set(out.instances["subgroup"]) == {"good"}
    assert "EXCLUDED" in caplog.text and "bad" in str(rep)
    assert excluded_summary(out)["validate.excluded_datasets"] == "bad"
    kept = exclude_flagged(res, run_validation(res, {"exclude": False}), {"exclude": False})
    assert kept.shape == (14, 120) and "INCLUDED although flagged" in caplog.text
    with pytest.raises(DataError, match="mostly_constant_dataset"):
        run_validation(res, {"strict": True})
    # the share is configurable: with 95% the 13 of 14 (93%) no longer count
    assert "mostly_constant_dataset" not in check_results(res, {"constant_share": 0.95}).counts()


def test_few_cells_and_missing_prompts_are_flagged():
    from assessors.data.exclusion import exclude_flagged

    res = _grading_failure()
    res.success[3, 5:] = np.nan  # m3: 5 answered cells
    res.instances.loc[["g1", "g2"], "prompt"] = np.nan
    rep = check_results(res, {"min_llm_cells": 10})
    assert next(i for i in rep.issues if i.check == "few_cells_llm").names == [["m3", 5]]
    assert next(i for i in rep.issues if i.check == "missing_prompt").names == [["good", 2, 60]]
    assert rep.flagged["llms"] == ["m3"] and rep.flagged["instances"] == ["g1", "g2"]
    out = exclude_flagged(res, rep, {})
    assert "m3" not in out.llms and out.has_prompts and out.shape == (13, 58)
    # success-pattern features need no text: then nothing is said about prompts
    assert "missing_prompt" not in check_results(res, {}, needs_text=False).counts()
    few = check_results(res.subset(ids=res.instance_ids[:70]), {"min_dataset_cells": 200})
    assert next(i for i in few.issues if i.check == "few_cells_dataset").names[0][0] == "bad"


def test_small_splits_are_reported_with_their_numbers():
    from assessors.data.validate import DEFAULTS, size_issues

    # 6 LLMs split 4/1/1, 112 training prompts, 100 of them taken as the reference set
    inst = {"train": [f"i{k}" for k in range(112)], "val": [], "test": []}
    llms = {"train": ["a", "b", "c", "d"], "val": ["e"], "test": ["f"]}
    issues = {i.check: i for i in size_issues(inst, llms, 100, DEFAULTS)}
    assert set(issues) == {"reference_share", "few_llms"}
    assert "100 of the 112 training prompts (89%" in issues["reference_share"].message
    assert "12 prompts x 4 training LLMs = 48 (LLM, prompt) pairs" in issues["reference_share"].message
    assert "4 train / 1 validation / 1 test of 6 LLMs" in issues["few_llms"].message
    assert issues["few_llms"].names == [["val", 1], ["test", 1]]
    # enough prompts and LLMs, or no validation LLMs at all (a choice, not an accident): nothing
    assert size_issues(inst, {"train": list("abcd"), "val": [], "test": ["e", "f"]}, 50, DEFAULTS) == []
    assert size_issues(inst, llms, 100, {**DEFAULTS, "max_reference_share": 0.9, "min_split_llms": 1}) == []


@pytest.mark.slow
def test_small_real_split_warns_and_fails_under_strict(compose, caplog):
    import logging

    from assessors.tasks.prepare import prepare

    small = ["data.subtasks=[bbh_navigate]", "features=success_pattern", "selector.size=100",
             "llm_split.n_train=4", "llm_split.n_val=1", "llm_split.n_test=1"]
    cfg = compose(small)
    prep = prepare(cfg)
    with caplog.at_level(logging.WARNING, logger="assessors.data.validate"):
        rep = validate_split(prep.results, prep.inst, prep.llms, prep.X, cfg.validate, reference_size=cfg.selector.size)
    n_train = len(prep.inst["train"])
    assert rep.counts()["reference_share"] == 100 and rep.counts()["few_llms"] == 2
    assert f"takes 100 of the {n_train} training prompts" in caplog.text
    strict = compose(small + ["validate.fail_on=[reference_share]"])
    with pytest.raises(DataError, match=f"100 of the {n_train} training prompts"):
        p = prepare(strict)
        validate_split(p.results, p.inst, p.llms, p.X, strict.validate, reference_size=100)
