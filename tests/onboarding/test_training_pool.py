"""The model's training prompts as the default candidate pool of adaptive onboarding: what the model
records (relative prompt files and training ids), how it is read back from the data dir, and
``predict.py mode=onboard`` using it when ``onboard.prompts`` is empty (named files win). Real BBH
results and prompt files, real OpenAI evals logs (KindsOfReasoning's format: the logs are the prompt
files), RouterBench (no gold answer: no pool, and the errors say why), a tiny latent assessor, an
in-process endpoint (httpx MockTransport)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from assessors.errors import ConfigError, DataError

from test_onboarding_client import FakeEndpoint

SUBTASKS = ["bbh_navigate", "bbh_sports_understanding", "bbh_web_of_lies"]
N_TRAIN = 300


@pytest.fixture(scope="module")
def results(data_dir):
    from assessors.data.loaders.open_llm_leaderboard_v2 import load_open_llm_leaderboard_v2

    return load_open_llm_leaderboard_v2(root=data_dir, subtasks=SUBTASKS, download=False)


@pytest.fixture(scope="module")
def split(results):
    rng = np.random.default_rng(0)
    ids = np.array(results.instance_ids)[rng.permutation(len(results.instance_ids))]
    return {"train": sorted(ids[:N_TRAIN].tolist()), "test": sorted(ids[N_TRAIN:].tolist())}


def _save(results, train: list[str], llms: list[str], path: Path) -> dict:
    """A tiny latent assessor trained on ``train`` with its training-prompt record, saved as an MLflow model
    and loaded back through the path predict.py uses."""
    import mlflow.pyfunc

    from assessors.core.latent import LatentAssessor
    from assessors.core.pyfunc import PIP_REQUIREMENTS, AssessorModel
    from assessors.data.training_prompts import training_prompts_record
    from assessors.features.ngrams import UnigramFeaturizer
    from assessors.routing.engine import load_assessor_model

    feat = UnigramFeaturizer(max_features=200).fit(results.prompts(train))
    ref = np.arange(0, len(train), 10)
    latent = LatentAssessor(dims=2, hidden_sizes=(16,), n_members=1, max_epochs=10, patience=3, residual=False,
                            num_threads=1).fit(feat.transform(results.prompts(train)), results.matrix(llms, train), ref)
    ref_ids = [train[i] for i in ref]
    record = training_prompts_record(results, train)
    model = AssessorModel(latent, feat, ref_ids, results.matrix(llms, ref_ids), llms, training_prompts=record)
    mlflow.pyfunc.save_model(str(path), python_model=model, pip_requirements=PIP_REQUIREMENTS)
    return {"dir": path, "model": load_assessor_model(str(path))}


@pytest.fixture(scope="module")
def saved(results, split, tmp_path_factory):
    return _save(results, split["train"], results.llms[:20], tmp_path_factory.mktemp("training_pool") / "model")


def test_the_record_names_relative_prompt_files_and_the_training_ids(results, split, saved, data_dir):
    from assessors.data.training_prompts import read_training_prompts, training_files, training_ids

    record = saved["model"].training_prompts  # saved with the model and loaded back
    assert training_files(record) == [f"open_llm_leaderboard_v2/prompts/{t}_prompts.csv" for t in SUBTASKS]
    assert sorted(training_ids(record)) == split["train"] and record["n_ids"] == N_TRAIN
    assert record["n_without_file"] == 0
    # each file's ids share their subtask prefix once: bbh_navigate/17 is stored as "17"
    assert [f["prefix"] for f in record["files"]] == [f"{t}/" for t in SUBTASKS]
    text = json.dumps(record)
    assert str(data_dir) not in text and not any(Path(f).is_absolute() for f in training_files(record))
    assert results.prompts(split["train"][:1])[0] not in text  # ids and file names, no texts
    df, files = read_training_prompts(record, data_dir)
    assert files == [str(data_dir / f) for f in training_files(record)]
    assert sorted(df["instance_id"]) == split["train"]
    got = df.set_index("instance_id").loc[split["train"]]
    assert got["prompt"].tolist() == results.prompts(split["train"])
    assert got["target"].tolist() == results.instances.loc[split["train"], "target"].tolist()
    # a data dir pointing at the data set folder itself is accepted, as the loaders accept it
    df2, _ = read_training_prompts(record, data_dir / "open_llm_leaderboard_v2")
    assert sorted(df2["instance_id"]) == split["train"]


def test_data_without_prompt_files_records_nothing(results, split):
    from assessors.data.training_prompts import training_prompts_record

    bare = results.subset(ids=split["train"])
    bare.meta = {k: v for k, v in bare.meta.items() if k != "prompt_files"}
    assert training_prompts_record(bare, split["train"]) is None
    bare.meta["prompt_files"] = {"bbh_navigate": "/abs/bbh_navigate_prompts.csv"}
    with pytest.raises(DataError, match="relative to the data dir"):
        training_prompts_record(bare, split["train"])


def test_a_missing_data_dir_is_an_error_naming_the_fix(saved, tmp_path, monkeypatch):
    from assessors.data.training_prompts import read_training_prompts

    record = saved["model"].training_prompts
    with pytest.raises(DataError, match="ASSESSORS_DATA_DIR") as e:
        read_training_prompts(record, tmp_path / "elsewhere", tmp_path / "cache", instead="pass onboard.prompts=[...]")
    assert "onboard.prompts" in str(e.value) and "bbh_navigate_prompts.csv" in str(e.value)
    monkeypatch.delenv("ASSESSORS_DATA_DIR", raising=False)
    with pytest.raises(DataError, match="no data dir is set"):
        read_training_prompts(record, None, tmp_path / "cache")


def _answers(results) -> dict[str, str]:
    """``{prompt: answer}`` of an LLM that answers 60% of the prompts right (another label of the subgroup else)."""
    rng = np.random.default_rng(1)
    inst = results.instances
    labels = inst.groupby("subgroup")["target"].unique()
    return {p: (t if rng.random() < 0.6 else next(x for x in labels[g] if x != t))
            for p, t, g in zip(inst["prompt"], inst["target"], inst["subgroup"])}


def _onboard(compose, saved, tmp_path, results, overrides=(), data_dir=None, monkeypatch=None):
    """``predict.py mode=onboard`` (adaptive, budget 6) of an LLM that answers 60% of the prompts right."""
    from assessors.onboarding.adaptive_run import AdaptiveOnboarding
    from assessors.tasks.onboard import run

    endpoint = FakeEndpoint(_answers(results))
    real = AdaptiveOnboarding.run
    monkeypatch.setattr(AdaptiveOnboarding, "run",
                        lambda self, *a, **k: real(self, *a, http_client=endpoint.client(), **k))
    extra = [] if data_dir is None else [f"paths.data_dir={data_dir}"]
    cfg = compose(["mode=onboard", f"model_uri={saved['dir']}", "onboard.strategy=adaptive", "adaptive.budget=6",
                   f"onboard.out_dir={tmp_path / 'onboard'}", "onboarding.model=fake", "onboarding.max_retries=0",
                   "onboarding.show_progress=false", "onboarding.logprobs=false", "tracking=none", *extra,
                   *overrides], config_name="predict")
    return run(cfg, model=saved["model"])


def test_onboarding_defaults_to_the_training_prompts(compose, saved, split, results, tmp_path, monkeypatch, caplog):
    from assessors.data.evidence_files import read_onboarded

    with caplog.at_level("INFO", logger="assessors.predict"):
        out = _onboard(compose, saved, tmp_path, results, monkeypatch=monkeypatch)
    assert out["pool"]["source"] == "the model's training prompts (open_llm_leaderboard_v2)"
    assert out["pool"]["n_prompts"] == N_TRAIN and len(out["pool"]["files"]) == 3
    assert f"candidate pool: the model's training prompts (open_llm_leaderboard_v2), {N_TRAIN} prompts" in caplog.text
    asked = pd.read_csv(tmp_path / "onboard" / "answers.csv", dtype={"instance_id": str})["instance_id"].tolist()
    assert out["n_asked"] == len(asked) == 6 and set(asked) <= set(split["train"])
    # the onboarding directory scores the LLM: its pool is the training ids of the recorded files
    state = json.loads((tmp_path / "onboard" / "adaptive.json").read_text())
    assert sorted(state["pool_ids"]) == split["train"]
    ids, texts, y, files = read_onboarded(tmp_path / "onboard")
    assert ids == asked and texts == results.prompts(asked) and files == out["pool"]["files"]


def test_named_prompt_files_win(compose, saved, split, results, tmp_path, monkeypatch):
    test = split["test"][:80]
    df = results.instances.loc[test, ["prompt", "target", "subgroup"]].rename_axis("instance_id").reset_index()
    df.to_csv(tmp_path / "mine.csv", index=False)
    out = _onboard(compose, saved, tmp_path, results, [f"onboard.prompts=[{tmp_path / 'mine.csv'}]"],
                   data_dir=tmp_path / "no-data-here", monkeypatch=monkeypatch)
    assert out["pool"] == {"source": "onboard.prompts", "n_prompts": 80, "files": [str(tmp_path / "mine.csv")]}
    asked = pd.read_csv(tmp_path / "onboard" / "answers.csv", dtype={"instance_id": str})["instance_id"]
    assert set(asked) <= set(test)
    assert "pool_ids" not in json.loads((tmp_path / "onboard" / "adaptive.json").read_text())


def test_onboarding_without_data_or_record_names_the_fix(compose, saved, results, tmp_path, monkeypatch):
    import copy

    with pytest.raises(DataError, match=r"Set ASSESSORS_DATA_DIR .* or pass onboard.prompts="):
        _onboard(compose, saved, tmp_path, results, data_dir=tmp_path / "no-data-here", monkeypatch=monkeypatch)
    old = copy.copy(saved["model"])
    del old.training_prompts  # a model saved before the record existed
    with pytest.raises(ConfigError, match="needs onboard.prompts=.*records no training prompts"):
        _onboard(compose, {**saved, "model": old}, tmp_path, results, monkeypatch=monkeypatch)


def test_reference_onboarding_reads_the_reference_prompts_from_the_training_files(compose, saved, tmp_path,
                                                                                   results, monkeypatch):
    from assessors.tasks.onboard import read_onboard_prompts

    model = saved["model"]
    cfg = compose(["mode=onboard", "tracking=none"], config_name="predict")
    df, files, source = read_onboard_prompts(cfg, model, ids=model.reference_ids)
    assert sorted(df["instance_id"]) == sorted(model.reference_ids) and source.startswith("the model's training")


def test_ids_round_trip_whatever_their_shape():
    from assessors.data.results import Results
    from assessors.data.training_prompts import training_ids, training_prompts_record

    ids = ["a/b/1", "a/b/10", "x7", "x8", "solo/3", "c/1", "c/2"]
    inst = pd.DataFrame({"subgroup": ["ab", "ab", "x", "x", "solo", "c", "none"]}, index=pd.Index(ids))
    res = Results(instances=inst, llms=["m"], success=np.ones((1, len(ids)), np.float32),
                  meta={"prompt_files": {"ab": "d/ab.csv", "x": "d/x.jsonl", "solo": "d/solo.csv", "c": "d/c.csv"}})
    record = training_prompts_record(res, ids)
    assert training_ids(record) == ids[:-1] and record["n_ids"] == 6 and record["n_without_file"] == 1
    assert [(f["path"], f["prefix"]) for f in record["files"]] == [("d/ab.csv", "a/b/"), ("d/x.jsonl", ""),
                                                                   ("d/solo.csv", "solo/"), ("d/c.csv", "c/")]


EVALS_LLMS = ["gpt-3.5-turbo-0613", "gpt-4-0613", "text-ada-001", "text-davinci-003"]
EVALS_DATASETS = ["causal_judgment", "moral_permissibility"]


@pytest.fixture(scope="module")
def evals(data_dir):
    from assessors.data.loaders.openai_evals import load_openai_evals

    return load_openai_evals(root=data_dir, models=EVALS_LLMS, download=False)


@pytest.fixture(scope="module")
def evals_saved(evals, tmp_path_factory):
    """A tiny latent assessor trained on 300 of the 524 openai_evals prompts (both datasets, 4 LLMs)."""
    ids = np.array(evals.instance_ids)
    train = sorted(ids[np.random.default_rng(0).permutation(len(ids))[:N_TRAIN]].tolist())
    return {"train": train, **_save(evals, train, evals.llms, tmp_path_factory.mktemp("evals_pool") / "model")}


@pytest.mark.slow
def test_openai_evals_logs_hold_the_training_prompts_and_their_targets(evals, evals_saved, data_dir):
    from assessors.data.training_prompts import read_training_prompts, training_files, training_ids

    train, record = evals_saved["train"], evals_saved["model"].training_prompts  # saved and loaded back
    # per dataset, the log the instance texts came from: the first chat log (chat wins over text-ada's string)
    assert training_files(record) == [f"openai_evals/{d}/gpt-3.5-turbo-0613.jsonl" for d in EVALS_DATASETS]
    assert sorted(training_ids(record)) == train and (record["n_ids"], record["n_without_file"]) == (N_TRAIN, 0)
    text = json.dumps(record)
    assert str(data_dir) not in text and evals.prompts(train[:1])[0] not in text  # relative files and ids only
    df, files = read_training_prompts(record, data_dir)
    assert files == [str(data_dir / f) for f in training_files(record)]
    assert sorted(df["instance_id"]) == train
    got = df.set_index("instance_id").loc[train]
    assert got["prompt"].tolist() == evals.prompts(train) and got["prompt"].str.startswith("system: ").all()
    assert got["target"].tolist() == evals.instances.loc[train, "target"].tolist()
    assert set(got["target"]) == {"Yes", "No"} and sorted(set(got["subgroup"])) == EVALS_DATASETS


def test_a_completion_log_reads_back_its_own_rendering(data_dir):
    from assessors.data.loaders.openai_evals import load_openai_evals
    from assessors.data.training_prompts import read_training_prompts, training_files, training_prompts_record

    res = load_openai_evals(root=data_dir, datasets=["causal_judgment"], models=["text-ada-001"], download=False)
    record = training_prompts_record(res, res.instance_ids)
    assert training_files(record) == ["openai_evals/causal_judgment/text-ada-001.jsonl"]
    df, _ = read_training_prompts(record, data_dir)
    got = df.set_index("instance_id").loc[res.instance_ids]
    assert got["prompt"].tolist() == res.prompts(res.instance_ids) and not got["prompt"].str.startswith("system:").any()


def test_a_dataset_whose_texts_come_from_several_logs_lists_no_file(data_dir, tmp_path):
    """The first chat log holds 20 samples, the next one all: no one log reads back every text."""
    from assessors.data.loaders.openai_evals import load_openai_evals

    src, dst = data_dir / "openai_evals" / "causal_judgment", tmp_path / "openai_evals" / "causal_judgment"
    dst.mkdir(parents=True)
    lines = (src / "gpt-3.5-turbo-0613.jsonl").read_text(encoding="utf-8").splitlines()
    first = list(dict.fromkeys(json.loads(x).get("sample_id") for x in lines[1:]))[:20]
    (dst / "gpt-3.5-turbo-0613.jsonl").write_text(
        "\n".join([lines[0]] + [x for x in lines[1:] if json.loads(x).get("sample_id") in first]) + "\n")
    (dst / "gpt-4-0613.jsonl").symlink_to(src / "gpt-4-0613.jsonl")
    res = load_openai_evals(root=tmp_path, download=False)
    assert len(res.instance_ids) == 186 and res.meta["prompt_files"] == {}


@pytest.mark.slow
def test_onboarding_an_openai_evals_model_asks_and_grades_its_training_prompts(compose, evals, evals_saved,
                                                                                tmp_path, monkeypatch):
    """The endpoint answers by prompt text (an unknown text fails): the pool's texts are the training texts,
    and each answer is graded against the log's ``expected`` (default graders: StartsWithOption Yes/No)."""
    out = _onboard(compose, evals_saved, tmp_path, evals, monkeypatch=monkeypatch)
    assert out["pool"]["source"] == "the model's training prompts (openai_evals)"
    assert out["pool"]["n_prompts"] == N_TRAIN and len(out["pool"]["files"]) == 2
    asked = pd.read_csv(tmp_path / "onboard" / "answers.csv", dtype={"instance_id": str})
    assert len(asked) == out["n_asked"] == 6 and set(asked["instance_id"]) <= set(evals_saved["train"])
    answers, inst = _answers(evals), evals.instances.loc[asked["instance_id"]]
    assert asked["success"].tolist() == [float(answers[p] == t) for p, t in zip(inst["prompt"], inst["target"])]


def test_routerbench_has_no_pool_and_the_errors_say_why(data_dir, saved, compose):
    from types import SimpleNamespace

    from assessors.data.loaders.routerbench import load_routerbench
    from assessors.data.training_prompts import no_pool_reason, read_training_prompts, training_prompts_record
    from assessors.onboarding.pool import load_training_pool
    from assessors.tasks.onboard import read_onboard_prompts

    raw = pd.read_csv(data_dir / "routerbench" / "winograde_test.csv", nrows=1).columns
    assert not {"target", "answer", "gold", "label", "test_list"} & set(raw)  # nothing to grade a new answer by
    rb = load_routerbench(root=data_dir, datasets=["winograde"], splits=["test"], responses=False, download=False)
    record = json.loads(json.dumps(training_prompts_record(rb, rb.instance_ids[:50])))
    assert record["files"] == [] and (record["n_ids"], record["n_without_file"]) == (0, 50)
    assert no_pool_reason(record).startswith("routerbench: ") and "no gold answer" in record["no_pool"]
    cfg = compose(["mode=onboard", "tracking=none"], config_name="predict")
    with pytest.raises(ConfigError, match=r"needs onboard.prompts=.*records no training prompts .*routerbench: "
                                          r".*no gold answer"):
        read_onboard_prompts(cfg, SimpleNamespace(training_prompts=record))
    model = saved["model"]
    with pytest.raises(ConfigError, match=r"routerbench: .*no gold answer.*list prompt files in server.onboarding.pool"):
        load_training_pool(record, None, model.assessor, model.reference_ids)
    with pytest.raises(ConfigError, match="no gold answer"):
        read_training_prompts(record, data_dir)
