"""Open LLM Leaderboard v2 loader on the real PredictaBoard files, and its bad-input errors."""
from __future__ import annotations

import csv
import logging

import numpy as np
import pytest

from assessors.data.loaders.open_llm_leaderboard_v2 import load_open_llm_leaderboard_v2, subtask_name
from assessors.data.results import Results
from assessors.errors import DataError

SNARKS = ("open_llm_leaderboard_v2/results/Big-Bench-Hard__snarks_results.csv",
          "open_llm_leaderboard_v2/prompts/bbh_snarks_prompts.csv")


def test_default_is_bbh_musr_77_by_6517(bbh_musr):
    r = bbh_musr
    # 78 LLMs in the files; one is dropped, by name, because its BBH item order cannot be told
    assert r.shape == (77, 6517)
    assert list(r.meta["item_order"]["excluded"]) == [
        "jaredjoss__pythia-410m-roberta-lr_8e7-kl_01-steps_12000-rlhf-model"]
    assert not np.isnan(r.success).any()
    assert r.has_prompts and r.instances["target"].notna().all()
    assert r.instances["subgroup"].nunique() == 27
    assert r.instances.index.is_unique
    assert "bbh_boolean_expressions/0" in r.instances.index
    assert r.instances.loc["bbh_boolean_expressions/0", "prompt"] == "not ( True ) and ( True ) is"
    acc = r.success.reshape(77, -1)
    by_sub = {g: np.nanmean(r.matrix(ids=list(ix))) for g, ix in r.instances.groupby("subgroup").groups.items()}
    assert 0.2 < min(by_sub.values()) < 0.3 and 0.8 < max(by_sub.values()) < 0.9  # README: 0.23 .. 0.84
    assert acc.dtype == np.float32


def test_keeps_latest_row_per_model(data_dir):
    path = data_dir / SNARKS[0]
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    model = rows[0]["model"]
    mine = sorted((r for r in rows if r["model"] == model), key=lambda r: r["timestamp"])
    assert len(mine) >= 2
    latest, older = mine[-1], mine[0]
    item = next((k for k in latest if k not in ("model", "timestamp") and latest[k] != older[k]), None)
    r = load_open_llm_leaderboard_v2(root=data_dir, subtasks="bbh_snarks")
    items = [k for k in latest if k not in ("model", "timestamp")]
    expect = np.array([float(latest[k]) for k in items], dtype=np.float32)
    np.testing.assert_array_equal(r.matrix([model], [f"bbh_snarks/{k}" for k in items])[0], expect)
    if item is not None:  # the two rows differ somewhere: the latest one must win
        assert r.matrix([model], [f"bbh_snarks/{item}"])[0, 0] == float(latest[item])


def test_logs_dropped_rows(data_dir, caplog):
    with caplog.at_level(logging.INFO, logger="assessors.data"):
        load_open_llm_leaderboard_v2(root=data_dir, subtasks=["bbh_snarks"])
    assert any("dropped 81 older rows" in m for m in caplog.messages)


def test_mmlu_pro_has_no_prompts(data_dir):
    r = load_open_llm_leaderboard_v2(root=data_dir, subtasks=[], mmlu_pro=True)
    # 43 LLMs in the file; two near-constant ones are dropped because their item order cannot be told
    assert r.shape == (41, 12032)
    assert sorted(r.meta["item_order"]["excluded"]) == [
        "LenguajeNaturalAI__leniachat-gemma-2b-v0", "jaredjoss__pythia-410m-roberta-lr_8e7-kl_01-steps_12000-rlhf-model"]
    assert int(np.isnan(r.success).sum()) == 671
    assert r.instances["prompt"].isna().all()
    with pytest.raises(DataError, match="prompt features were requested"):
        r.require_prompts()


def test_subtask_globs_and_root_forms(data_dir):
    r = load_open_llm_leaderboard_v2(root=data_dir / "open_llm_leaderboard_v2", subtasks=["musr_*"])
    assert set(r.instances["subgroup"]) == {"musr_murder_mysteries", "musr_object_placements", "musr_team_allocation"}
    assert subtask_name("Big-Bench-Hard__snarks_results.csv") == "bbh_snarks"
    assert subtask_name("MMLU-Pro_results.csv") == "mmlu_pro"


def test_empty_selection_is_an_error(data_dir):
    with pytest.raises(DataError, match=r"bbh_nonexistent_\*.*match nothing"):
        load_open_llm_leaderboard_v2(root=data_dir, subtasks=["bbh_nonexistent_*"])


def test_root_without_dataset_folder(tmp_path):
    with pytest.raises(DataError, match="has no open_llm_leaderboard_v2/ folder"):
        load_open_llm_leaderboard_v2(root=tmp_path)


def test_parquet_round_trip_of_real_results(data_dir, tmp_path):
    r = load_open_llm_leaderboard_v2(root=data_dir, subtasks=["bbh_snarks", "musr_team_allocation"])
    back = Results.from_parquet(r.to_parquet(tmp_path / "res"))
    assert back.llms == r.llms and back.instance_ids == r.instance_ids
    np.testing.assert_array_equal(back.success, r.success)
    assert back.instances[["prompt", "subgroup", "target"]].equals(r.instances[["prompt", "subgroup", "target"]])
    assert back.fingerprint() == r.fingerprint()


def _edit_line(path, line_no, fn):
    lines = path.read_text().splitlines(keepends=True)
    lines[line_no - 1] = fn(lines[line_no - 1])
    path.write_text("".join(lines))


def test_non_binary_value_names_file_line_and_column(copy_files):
    root = copy_files(*SNARKS)
    path = root / SNARKS[0]
    header = path.read_text().splitlines()[0].split(",")
    _edit_line(path, 3, lambda s: ",".join(s.rstrip("\n").split(",")[:2] + ["2"] + s.split(",")[3:]))
    with pytest.raises(DataError, match=rf"snarks_results.csv: non-binary success value 2.0 at line 3 .*column '{header[2]}'"):
        load_open_llm_leaderboard_v2(root=root, subtasks=["bbh_snarks"])


def test_truncated_results_csv(copy_files):
    root = copy_files(*SNARKS)
    path = root / SNARKS[0]
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])  # cut in the middle of a row
    with pytest.raises(DataError, match="snarks_results.csv: truncated or corrupt CSV"):
        load_open_llm_leaderboard_v2(root=root, subtasks=["bbh_snarks"])


def test_truncated_prompts_csv(copy_files):
    root = copy_files(*SNARKS)
    path = root / SNARKS[1]
    text = path.read_text()
    cut = text.index(',"', len(text) // 2) + 8  # inside a quoted prompt
    path.write_text(text[:cut])
    with pytest.raises(DataError, match=r"bbh_snarks_prompts.csv: line \d+ has 2 fields, fewer than the 3 of the header"):
        load_open_llm_leaderboard_v2(root=root, subtasks=["bbh_snarks"])
    # cut at the end of a prompt, before its target: a short last row, not a silent NaN target
    path.write_text(text.rstrip("\n").rsplit(",", 1)[0] + "\n")
    with pytest.raises(DataError, match=r"bbh_snarks_prompts.csv: line \d+ has 2 fields, fewer than the 3 of the header"):
        load_open_llm_leaderboard_v2(root=root, subtasks=["bbh_snarks"])


def test_duplicated_prompt_id(copy_files):
    root = copy_files(*SNARKS)
    path = root / SNARKS[1]
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    rows[2][0] = rows[1][0]
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows(rows)
    with pytest.raises(DataError, match=rf"bbh_snarks_prompts.csv: duplicated id '{rows[1][0]}' at data row 2 \(first at data row 1"):
        load_open_llm_leaderboard_v2(root=root, subtasks=["bbh_snarks"])


def test_missing_prompts_are_logged_not_dropped(copy_files, caplog):
    root = copy_files(SNARKS[0])
    with caplog.at_level(logging.WARNING, logger="assessors.data"):
        r = load_open_llm_leaderboard_v2(root=root, subtasks=["bbh_snarks"])
    assert r.shape[1] == 178 and r.instances["prompt"].isna().all()
    assert any("no prompt file" in m for m in caplog.messages)
    with pytest.raises(DataError, match="have no prompt text"):
        r.require_prompts()
