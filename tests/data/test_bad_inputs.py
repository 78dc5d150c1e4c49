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


# ---------------------------------------------------------- names: white space, NA-like, case
def test_table_llm_name_with_a_trailing_space_on_half_its_rows_is_an_error(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text("llm,instance_id,success\nm1,q1,1\nm1 ,q2,0\nm2,q1,0\nm2,q2,1\n")
    with pytest.raises(DataError, match=r"r.csv: 1 LLM name\(s\) with leading or trailing white space: 'm1 ' at line 3"):
        load_table(path)
    path.write_text("llm,q1,q2\nm1,1,0\n m2,0,1\n")
    with pytest.raises(DataError, match=r"' m2' at line 3"):
        load_table(path, format="wide")
    path.write_text("llm,instance_id,success\nm1,q1,1\nm1,q2 ,0\n")
    with pytest.raises(DataError, match=r"instance id\(s\) with leading or trailing white space: 'q2 ' at line 3"):
        load_table(path)


def test_leaderboard_model_name_with_a_trailing_space_in_one_file_is_an_error(copy_files):
    """One of two subtask files spells an LLM with a trailing space: an error naming the file and line,
    not a second LLM."""
    nav = "open_llm_leaderboard_v2/results/Big-Bench-Hard__navigate_results.csv"
    root = copy_files(SNARKS[0], nav)
    path = root / nav
    lines = path.read_text().split("\n")
    name = lines[1].split(",")[0]
    lines[1] = lines[1].replace(name, name + " ", 1)
    path.write_text("\n".join(lines))
    with pytest.raises(DataError, match=rf"navigate_results.csv: 1 model name\(s\) with leading or trailing white "
                                        rf"space: '{name} ' at line 2"):
        load_open_llm_leaderboard_v2(root=root, subtasks=["bbh_snarks", "bbh_navigate"], prompts=False,
                                     download=False)
    # a model called "NA" in both files is one LLM of that name, not a missing name
    for rel in (SNARKS[0], nav):
        text = (root / rel).read_text().replace(name + " ,", name + ",", 1)
        (root / rel).write_text(text.replace(name + ",", "NA,"))
    res = load_open_llm_leaderboard_v2(root=root, subtasks=["bbh_snarks", "bbh_navigate"], prompts=False,
                                       download=False, item_order="as_written")
    assert "NA" in res.llms and "nan" not in res.llms and not np.isnan(res.matrix(["NA"])).all()


@pytest.mark.parametrize("na", ["NA", "nan", "null", "None", "N/A"])
def test_na_like_ids_llms_and_subgroups_stay_names(tmp_path, na):
    results, prompts = tmp_path / "r.csv", tmp_path / "p.csv"
    results.write_text(f"llm,instance_id,success\n{na},{na},1\n{na},q2,0\nm2,{na},0\nm2,q2,1\n")
    prompts.write_text(f"instance_id,prompt,subgroup\n{na},first prompt,{na}\nq2,second prompt,s\n")
    r = load_table(results, prompts)
    assert r.llms == [na, "m2"] and r.instance_ids == [na, "q2"]
    assert r.instances["subgroup"].tolist() == [na, "s"] and r.success.tolist() == [[1, 0], [0, 1]]
    # a subgroup carried in the long table is a name too (not a dropped NaN)
    results.write_text(f"llm,instance_id,success,subgroup\nm1,q1,1,{na}\nm1,q2,0,s\n")
    assert load_table(results).instances["subgroup"].tolist() == [na, "s"]
    # two NA-like ids are two ids, not one repeated "nan"
    prompts.write_text("instance_id,prompt\nNA,a\nnull,b\n")
    assert load_table_ids(tmp_path, "NA,null") == ["NA", "null"]


def load_table_ids(tmp_path, ids: str) -> list[str]:
    a, b = ids.split(",")
    (tmp_path / "r2.csv").write_text(f"llm,instance_id,success\nm,{a},1\nm,{b},0\n")
    return load_table(tmp_path / "r2.csv", tmp_path / "p.csv").instance_ids


def test_whitespace_prompt_is_flagged_by_id_and_left_out(tmp_path, caplog):
    from assessors.data.exclusion import exclude_flagged
    from assessors.data.validate import check_results

    results, prompts = tmp_path / "r.csv", tmp_path / "p.csv"
    rows = [f"m{k},q{i},{(i + k) % 2}" for k in range(3) for i in range(30)]
    results.write_text("llm,instance_id,success\n" + "\n".join(rows) + "\n")
    prompts.write_text("instance_id,prompt,subgroup\n" + "".join(
        f"q{i},{'   ' if i == 7 else f'prompt {i}'},s\n" for i in range(30)))
    r = load_table(results, prompts)
    rep = check_results(r)
    blank = [i for i in rep.issues if i.check == "blank_prompt"]
    assert len(blank) == 1 and blank[0].names == ["q7"] and "'q7'" in blank[0].message
    assert rep.flagged["instances"] == ["q7"]
    with caplog.at_level(logging.WARNING):
        out = exclude_flagged(r, rep)
    assert "q7" not in out.instance_ids and out.shape == (3, 29)
    assert "EXCLUDED" in caplog.text and "white space" in caplog.text


def test_names_that_differ_only_by_case_are_warned_by_name(tmp_path):
    from assessors.data.validate import check_results

    path = tmp_path / "r.csv"
    path.write_text("llm,instance_id,success,subgroup\nGPT-4,q1,1,Logic\ngpt-4,q1,0,Logic\nGPT-4,Q2,0,logic\n"
                    "gpt-4,q2,1,logic\n")
    r = load_table(path)
    assert r.llms == ["GPT-4", "gpt-4"]  # kept apart: they may be two models
    (issue,) = [i for i in check_results(r).issues if i.check == "case_variants"]
    assert issue.count == 3
    assert "LLMs 'GPT-4' / 'gpt-4'" in issue.message and "subgroups 'Logic' / 'logic'" in issue.message
    assert "instance ids 'Q2' / 'q2'" in issue.message


# ------------------------------------------------------------------- prompt and answer files
@pytest.mark.parametrize("text, match", [
    ("id,prompt\n1,a\n 2,b\n", r"p.csv: 1 id\(s\) with leading or trailing white space: ' 2' at data row 2"),
    ("id,prompt\n1,a\n1,b\n", r"p.csv: duplicated id '1' at data row 2 \(first at data row 1"),
    ("id,prompt\n1,a\n,b\n", r"p.csv: empty id in data row 2"),
    ("id,prompt,subgroup\n1,a,s\n2,b,s \n", r"p.csv: 1 subgroup\(s\) with leading or trailing white space: 's ' at data"),
    ("id,prompt\n1,a\n2,\t\n", r"p.csv: empty prompt in data row 2"),
])
def test_prompt_file_id_rule(tmp_path, text, match):
    from assessors.data.prompts import read_prompt_file

    (tmp_path / "p.csv").write_text(text)
    with pytest.raises(DataError, match=match):
        read_prompt_file(tmp_path / "p.csv")


def test_prompt_files_na_ids_row_ids_and_an_id_in_two_files(tmp_path):
    from assessors.data.prompt_files import read_prompts, read_reference
    from assessors.data.prompts import read_prompt_files

    p = tmp_path / "p.csv"
    p.write_text("id,prompt\nNA,a\nnull,b\n")
    assert read_prompts(p)["id"].tolist() == ["NA", "null"]
    (tmp_path / "q.jsonl").write_text('{"prompt": "a"}\n{"prompt": "b"}\n')
    assert read_prompts(tmp_path / "q.jsonl")["id"].tolist() == ["0", "1"]  # no id column: row numbers
    (tmp_path / "n.jsonl").write_text('{"id": 7, "prompt": "a"}\n{"id": "007", "prompt": "b"}\n{"id": 7.5, "prompt": "c"}\n')
    assert read_prompts(tmp_path / "n.jsonl")["id"].tolist() == ["7", "007", "7.5"]  # JSON numbers are ids too
    pq = tmp_path / "p.parquet"
    pd.DataFrame({"instance_id": ["NA", "q2"], "prompt": ["a", "b"]}).to_parquet(pq)
    assert read_prompts(pq)["id"].tolist() == ["NA", "q2"]
    t = tmp_path / "t.csv"
    t.write_text("id,prompt,target,subgroup\nNA,a,x,s\n")
    with pytest.raises(DataError, match=r"duplicated instance id 'NA' at row 1 .*Pass each file once"):
        read_prompt_files([t, t])
    ref = tmp_path / "ref.csv"
    ref.write_text("reference_id,success\nNA,1\nnan,\n")
    assert read_reference(ref) == {"NA": 1.0, "nan": None}
    ref.write_text("reference_id,success\nNA,1\nNA,0\n")
    with pytest.raises(DataError, match=r"duplicated reference id 'NA' at line 3 \(first at line 2"):
        read_reference(ref)


def test_results_refuse_padded_names_from_any_loader():
    from assessors.data.results import Results

    inst = pd.DataFrame({"subgroup": ["s", "s"]}, index=["q1", "q2"])
    with pytest.raises(DataError, match=r"x: 1 LLM name\(s\) with leading or trailing white space: 'a ' at row 1"):
        Results(instances=inst, llms=["a", "a "], success=np.ones((2, 2)), name="x")
    with pytest.raises(DataError, match=r"x: 1 subgroup\(s\) .*'s\\t' at row 1"):
        Results(instances=inst.assign(subgroup=["s", "s\t"]), llms=["a"], success=np.ones((1, 2)), name="x")
    with pytest.raises(DataError, match=r"x: duplicated instance id 'q1' at row 1 \(first at row 0"):
        Results(instances=inst.set_axis(["q1", "q1"]), llms=["a"], success=np.ones((1, 2)), name="x")
