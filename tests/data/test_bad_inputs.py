"""Bad input, loader by loader: each case is a clear error naming the place, or a named warning with
the block left out of the run; none loads as a silently wrong number."""
from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pytest

from assessors.data.loaders.open_llm_leaderboard_v2 import load_open_llm_leaderboard_v2
from assessors.data.loaders.openai_evals import load_openai_evals
from assessors.data.loaders.routerbench import load_routerbench
from assessors.data.loaders.score_matrix import load_score_matrix
from assessors.data.loaders.table import load_table
from assessors.errors import DataError

LONG = "llm,instance_id,success\nm1,q1,1\nm1,q2,0\nm2,q1,0\nm2,q2,1\n"
WIDE = "llm,q1,q2\nm1,1,0\nm2,0,1\n"


# ------------------------------------------------------------------------------------------ table
@pytest.mark.parametrize("text, fmt, match", [
    (LONG + "m3,q1\n", "long", r"line 6 has 2 fields, fewer than the 3 of the header \(a line cut off\?\)"),
    (LONG + "m3,q1,", "long", r"empty success cell at line 6"),
    (LONG + "m3,q1,1,0.2\n", "long", r"line 6 has 4 fields, more than the 3"),
    (LONG + ",q1,1\n", "long", r"empty LLM name at line 6"),
    (LONG + "  ,q1,1\n", "long", r"empty LLM name at line 6"),
    (LONG + "m3,q1,2\n", "long", r"non-binary success value '2'"),
    (WIDE + "m3,1\n", "wide", r"line 4 has 2 fields, fewer than the 3"),
    (WIDE + ",1,1\n", "wide", r"empty LLM name at line 4"),
])
def test_table_csv_errors_name_the_line(tmp_path, text, fmt, match):
    path = tmp_path / "r.csv"
    path.write_text(text)
    with pytest.raises(DataError, match=match):
        load_table(path, format=fmt)


def test_table_empty_cells_only_when_declared_missing(tmp_path, caplog):
    path = tmp_path / "r.csv"
    path.write_text(LONG + "m3,q1,\nm3,q2,1\n")
    with caplog.at_level(logging.WARNING):
        r = load_table(path, missing_values=[""])
    assert r.llms == ["m1", "m2", "m3"] and np.isnan(r.success[2, 0]) and r.success[2, 1] == 1
    assert "1 success cell(s) declared missing" in caplog.text
    path.write_text(LONG + "m3,q1,NA\n")
    with pytest.raises(DataError, match="non-binary success value 'NA'"):
        load_table(path)  # "NA" is a value like any other until declared
    assert np.isnan(load_table(path, missing_values=["NA"]).success[2, 0])
    # wide: an empty cell is "not evaluated" by default (documented), counted in a warning
    path.write_text(WIDE + "m3,,1\n")
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        w = load_table(path, format="wide")
    assert np.isnan(w.success[2, 0]) and "declared missing" in caplog.text
    with pytest.raises(DataError, match=r"empty success cell at line 4, column 'q1'"):
        load_table(path, format="wide", missing_values=[])


def test_table_wrong_encoding_is_named_not_called_truncated(tmp_path):
    results, prompts = tmp_path / "r.csv", tmp_path / "p.csv"
    results.write_text(LONG)
    prompts.write_bytes("instance_id,prompt\nq1,caf\u00e9 au lait\nq2,th\u00e9\n".encode("latin-1"))
    with pytest.raises(DataError, match=r"p.csv: not UTF-8 text: byte 0xe9 at line 2, column 7"):
        load_table(results, prompts)
    results.write_bytes((LONG + "m\u00e9,q1,1\n").encode("cp1252"))
    with pytest.raises(DataError, match=r"r.csv: not UTF-8 text: byte 0xe9 at line 6"):
        load_table(results)


def test_table_parquet_null_cells(tmp_path):
    path = tmp_path / "r.parquet"
    pd.DataFrame({"llm": ["m1", "m1", None], "instance_id": ["q1", "q2", "q1"], "success": [1, 0, 1]}).to_parquet(path)
    with pytest.raises(DataError, match="empty LLM name at row 2"):
        load_table(path)
    pd.DataFrame({"llm": ["m1", "m1", "m2"], "instance_id": ["q1", "q2", "q1"],
                  "success": [1, 0, None]}).to_parquet(path)
    with pytest.raises(DataError, match="empty success cell at row 2"):
        load_table(path)


# ------------------------------------------------------------------------------- other loaders
SNARKS = ["open_llm_leaderboard_v2/results/Big-Bench-Hard__snarks_results.csv",
          "open_llm_leaderboard_v2/prompts/bbh_snarks_prompts.csv"]


def test_leaderboard_bad_files(copy_files):
    root = copy_files(*SNARKS)
    prompts = root / SNARKS[1]
    text = prompts.read_bytes()
    prompts.write_bytes(text.replace(b"sarcastic", "sarc\u00e1stic".encode("latin-1"), 1))
    with pytest.raises(DataError, match=r"bbh_snarks_prompts.csv: not UTF-8 text: byte 0xe1 at line \d+"):
        load_open_llm_leaderboard_v2(root=root, subtasks=["bbh_snarks"])
    prompts.unlink()  # a missing prompt file: a warning at load, the featurization error names the file
    res = load_open_llm_leaderboard_v2(root=root, subtasks=["bbh_snarks"])
    with pytest.raises(DataError, match=r"bbh_snarks \(\d+ items, expected prompt file .*bbh_snarks_prompts.csv\)"):
        res.require_prompts()


def test_routerbench_line_cut_before_its_scores(copy_files):
    root = copy_files("routerbench/winograde_test.csv")
    path = root / "routerbench" / "winograde_test.csv"
    frame = pd.read_csv(path)
    frame.iloc[:5].to_csv(path, index=False)
    data = path.read_bytes().rstrip(b"\n")
    last = data.rfind(b"\n")
    # the last line is cut after its first fields and loses every score: without the line check the
    # C parser fills them with NaN, i.e. "no score" for every model
    cut = data[:last] + b"\n" + b",".join(data[last + 1:].split(b",")[:4]) + b"\n"
    path.write_bytes(cut)
    with pytest.raises(DataError, match=r"winograde_test.csv: line 6 has \d+ fields, fewer than the 38"):
        load_routerbench(root=root, datasets=["winograde"], splits=["test"])


def test_openai_evals_wrong_encoding(copy_files):
    cj = "openai_evals/causal_judgment/gpt-4-0613.jsonl"
    root = copy_files(cj)
    path = root / cj
    lines = path.read_bytes().split(b"\n")
    lines[3] = lines[3].replace(b'"', b'"\xff', 1)
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(DataError, match=r"gpt-4-0613.jsonl: not UTF-8 text: byte 0xff at line 4"):
        load_openai_evals(root=root)


def test_score_matrix_empty_model_name(tmp_path):
    (tmp_path / "score_matrices").mkdir()
    np.savez(tmp_path / "score_matrices" / "x.npz", scores=np.zeros((2, 3), np.uint8), models=np.array(["a", " "]))
    with pytest.raises(DataError, match="x.npz: empty model name at row 1"):
        load_score_matrix("x", root=tmp_path)
