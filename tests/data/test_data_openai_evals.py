"""OpenAI evals loader and the KindsOfReasoning table loader (on a table built from the evals logs)."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from assessors.data.instance_splits import PredefinedSplit
from assessors.data.loaders.openai_evals import load_kindsofreasoning_table, load_openai_evals, read_evals_log
from assessors.errors import DataError

CJ = "openai_evals/causal_judgment"


@pytest.fixture(scope="module")
def evals(data_dir):
    return load_openai_evals(root=data_dir)


def test_loads_all_models_and_datasets(evals):
    assert evals.shape == (14, 524)
    assert not np.isnan(evals.success).any()
    assert evals.instances["subgroup"].value_counts().to_dict() == {"moral_permissibility": 338, "causal_judgment": 186}
    p = evals.instances.loc["causal_judgment.test.57", "prompt"]
    assert p.startswith("system: How would a typical person answer") and "\nuser: A person, Joe," in p
    assert set(evals.instances["target"]) == {"Yes", "No"}
    assert len(evals.responses) == 14 * 524


def test_success_is_match_correct(evals, data_dir):
    raw = {}
    for line in open(data_dir / CJ / "gpt-4-0613.jsonl"):
        rec = json.loads(line)
        if rec.get("type") == "match":
            raw[rec["sample_id"]] = float(rec["data"]["correct"])
    ids = sorted(raw)
    np.testing.assert_array_equal(evals.matrix(["gpt-4-0613"], ids)[0], [raw[i] for i in ids])


def test_filters(data_dir):
    r = load_openai_evals(root=data_dir, datasets=["causal_judgment"], models=["gpt-4-*"])
    assert r.shape == (4, 186) and all(m.startswith("gpt-4-") for m in r.llms)
    with pytest.raises(DataError, match="match nothing"):
        load_openai_evals(root=data_dir, models=["claude-*"])


def test_truncated_jsonl_names_file_and_line(copy_files):
    root = copy_files(f"{CJ}/gpt-4-0613.jsonl")
    path = root / CJ / "gpt-4-0613.jsonl"
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    n_lines = path.read_bytes().count(b"\n") + 1
    with pytest.raises(DataError, match=rf"gpt-4-0613.jsonl: line {n_lines} is not valid JSON"):
        load_openai_evals(root=root)


def test_duplicated_event_is_an_error(copy_files):
    root = copy_files(f"{CJ}/gpt-4-0613.jsonl")
    path = root / CJ / "gpt-4-0613.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines + [lines[1]]))
    with pytest.raises(DataError, match="duplicated sampling event for sample_id 'causal_judgment.test.57'"):
        read_evals_log(path)


def _kor_table(evals) -> pd.DataFrame:
    """A KindsOfReasoning-style final table built from the real evals logs."""
    inst = evals.instances
    system, user = zip(*(p.split("\nuser: ", 1) for p in inst["prompt"]))
    rng = np.random.default_rng(0)
    table = pd.DataFrame({
        "prompt": user, "system_prompt": [s.removeprefix("system: ") for s in system],
        "dataset": inst["subgroup"].to_numpy(), "target": inst["target"].to_numpy(),
        "Random_split": rng.choice(["train", "validation", "test"], len(inst), p=[0.6, 0.1, 0.3]),
    })
    for k in range(1, 5):
        table[f"OOD_{k}_split"] = np.where(table["dataset"] == "causal_judgment", "test", "train")
    resp = evals.responses.pivot(index="instance_id", columns="llm", values="response").reindex(inst.index)
    for i, llm in enumerate(evals.llms):
        table[f"Success_{llm}"] = evals.success[i].astype(bool)
        table[f"Answer_{llm}"] = resp[llm].to_numpy()
    return table


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_kindsofreasoning_table_matches_evals(evals, tmp_path, fmt):
    table = _kor_table(evals)
    path = tmp_path / f"KindsOfReasoning_with_llm_results.{fmt}"
    if fmt == "csv":
        table.to_csv(path, index=False)
    else:
        table.to_json(path, orient="records", lines=True)
    r = load_kindsofreasoning_table(path)
    assert r.shape == evals.shape and r.llms == evals.llms
    np.testing.assert_array_equal(r.success, evals.success)  # rows kept in the same order
    np.testing.assert_array_equal(r.instances["prompt"].to_numpy(), evals.instances["prompt"].to_numpy())
    assert r.instance_ids[0] == "causal_judgment/0"
    parts = PredefinedSplit("Random_split").split(r)
    assert sum(map(len, parts.values())) == 524
    ood = PredefinedSplit("OOD_1_split")
    with pytest.raises(Exception, match="val part is empty"):
        ood.split(r)
    assert len(r.responses) == 14 * 524


def test_kindsofreasoning_non_binary_names_line_and_column(evals, tmp_path):
    table = _kor_table(evals)
    table["Success_gpt-4-0613"] = table["Success_gpt-4-0613"].astype(object)
    table.loc[5, "Success_gpt-4-0613"] = "maybe"
    path = tmp_path / "kor.csv"
    table.to_csv(path, index=False)
    with pytest.raises(DataError, match=r"kor.csv: record 6, column 'Success_gpt-4-0613': non-binary success value 'maybe'"):
        load_kindsofreasoning_table(path)
