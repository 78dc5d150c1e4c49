"""The one prompts-file reader: CSV or JSONL, id columns, clear errors naming the file."""
from __future__ import annotations

import pandas as pd
import pytest

from assessors.data.prompts import read_prompt_file, read_prompt_files
from assessors.errors import DataError


def test_read_prompt_files_names_ids_as_the_loader_does(data_dir, tmp_path):
    d = data_dir / "open_llm_leaderboard_v2" / "prompts"
    df = read_prompt_files([d / "bbh_navigate_prompts.csv", d / "bbh_object_counting_prompts.csv"], limit=3)
    assert len(df) == 6 and set(df["subgroup"]) == {"bbh_navigate", "bbh_object_counting"}
    assert list(df.columns[:3]) == ["instance_id", "prompt", "target"]
    raw = pd.read_csv(d / "bbh_navigate_prompts.csv", dtype=str)["id"].head(3)
    assert df["instance_id"].tolist()[:3] == ("bbh_navigate/" + raw).tolist()  # as the loader names them
    ids = tmp_path / "ids.txt"
    ids.write_text("\n".join(df["instance_id"].iloc[[0, 4]]))
    assert read_prompt_files([d / "bbh_navigate_prompts.csv", d / "bbh_object_counting_prompts.csv"],
                        ids=set(ids.read_text().split()))["instance_id"].tolist() == df["instance_id"].iloc[[0, 4]].tolist()
    j = tmp_path / "p.jsonl"
    pd.DataFrame({"id": ["a"], "prompt": ["q"], "target": ["1"], "subgroup": ["s"]}).to_json(j, orient="records", lines=True)
    assert read_prompt_files([j]).iloc[0].to_dict() == {"instance_id": "a", "prompt": "q", "target": "1", "subgroup": "s"}
    with pytest.raises(DataError, match="missing column 'target'"):
        pd.DataFrame({"id": ["a"], "prompt": ["q"]}).to_csv(tmp_path / "x.csv", index=False)
        read_prompt_files([tmp_path / "x.csv"])
    with pytest.raises(DataError, match="not found"):
        read_prompt_files([tmp_path / "nope.csv"])


def test_read_prompt_file_keeps_ids_as_text_and_rejects_empty_prompts(tmp_path):
    f = tmp_path / "p.csv"
    f.write_text("reference_id,prompt,extra\n007,hello,\n8,there,x\n")
    df = read_prompt_file(f)
    assert df["instance_id"].tolist() == ["007", "8"] and df["extra"].tolist() == ["", "x"]
    assert list(df.columns) == ["instance_id", "prompt", "extra"]
    f.write_text("id,prompt\n1,hello\n2,  \n")
    with pytest.raises(DataError, match=r"p.csv: empty prompt in data row 2"):
        read_prompt_file(f)
    j = tmp_path / "p.jsonl"
    j.write_text('{"prompt": "q"}\n{"prompt": null}\n')
    with pytest.raises(DataError, match="empty prompt in data row 2"):
        read_prompt_file(j)
    j.write_text('{"prompt": "q"\n')
    with pytest.raises(DataError, match="p.jsonl: not a JSON-lines file"):
        read_prompt_file(j)
    j.write_text('{"text": "q"}\n')
    with pytest.raises(DataError, match="missing column 'prompt'"):
        read_prompt_file(j)


def test_an_openai_evals_log_is_read_as_the_loader_reads_it(data_dir, tmp_path):
    from assessors.data.loaders.openai_evals import load_openai_evals

    log = data_dir / "openai_evals" / "moral_permissibility" / "gpt-4-0613.jsonl"
    res = load_openai_evals(root=data_dir, datasets=["moral_permissibility"], models=["gpt-4-0613"], download=False)
    df = read_prompt_files([log]).set_index("instance_id")
    assert sorted(df.index) == sorted(res.instance_ids) and set(df["subgroup"]) == {"moral_permissibility"}
    assert df.loc[res.instance_ids, "prompt"].tolist() == res.prompts(res.instance_ids)
    assert df.loc[res.instance_ids, "target"].tolist() == res.instances["target"].tolist()
    # a JSON-lines prompt table is still a table, and a file that is not JSON still says so
    j = tmp_path / "p.jsonl"
    pd.DataFrame({"id": ["a"], "prompt": ["q"], "type": ["match"]}).to_json(j, orient="records", lines=True)
    assert read_prompt_file(j)["instance_id"].tolist() == ["a"]
    j.write_text("not json\n")
    with pytest.raises(DataError, match="not a JSON-lines file"):
        read_prompt_file(j)


def _entry_points():
    """Every reader of a file that names prompts by id: (name, reader of one CSV path)."""
    from assessors.data.loaders import table
    from assessors.data.loaders.open_llm_leaderboard_v2 import _attach_prompts
    from assessors.data.prompt_files import read_prompts, read_reference

    return {
        "read_prompt_file": read_prompt_file,
        "read_prompt_files (training pool, onboarding, evidence)": lambda p: read_prompt_files([p]),
        "predict.py prompts (read_prompts)": read_prompts,
        "table loader prompts": table.read_prompts,
        "leaderboard loader prompts": lambda p: _attach_prompts(pd.DataFrame(index=["1", "2"]), p, "s", ["1", "2"]),
        "reference results (read_reference)": read_reference,
    }


@pytest.mark.parametrize("entry", list(_entry_points()))
@pytest.mark.parametrize("rows, match", [
    (["1,a,x,1", "1,b,y,0"], r"p.csv: duplicated (reference )?id '1' at (data row 2|line 3) \(first at (data row 1|line 2)"),
    (["1,a,x,1", " 2,b,y,0"], r"p.csv: 1 (reference )?id\(s\) with leading or trailing white space: ' 2' at (data row 2|line 3)"),
    (["1,a,x,1", ",b,y,0"], r"p.csv: empty (reference )?id in (data row 2|line 3)"),
])
def test_every_prompt_file_entry_point_applies_the_one_id_rule(tmp_path, entry, rows, match):
    """The same file is refused with the same message by every reader: one id rule, one duplicate check."""
    p = tmp_path / "p.csv"
    p.write_text("id,prompt,target,success\n" + "\n".join(rows) + "\n")
    with pytest.raises(DataError, match=match):
        _entry_points()[entry](p)


@pytest.mark.parametrize("entry", [e for e in _entry_points() if "reference" not in e])
def test_every_prompt_reader_refuses_a_truncated_file(tmp_path, entry):
    """A file cut off after a row's prompt is an error naming the line, not a row with a missing target."""
    p = tmp_path / "p.csv"
    p.write_text('id,prompt,target,success\n1,a,x,1\n2,"two\nlines"')
    with pytest.raises(DataError, match=r"p.csv: line 3 has 2 fields, fewer than the 4 of the header"):
        _entry_points()[entry](p)
