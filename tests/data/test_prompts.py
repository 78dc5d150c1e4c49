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
