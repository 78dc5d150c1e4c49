"""Few-shot variants: demonstrations are never evaluated items, go in as chat turns, and combine."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from assessors.data.loaders.table import load_table
from assessors.errors import DataError
from assessors.data.prompts import read_prompt_files as read_prompts
from assessors.onboarding.variants import combine, few_shot_variants, split_chat_prompt

from test_onboarding_client import FakeEndpoint, _onboarder


def _bbh(data_dir):
    p = data_dir / "open_llm_leaderboard_v2" / "prompts"
    return read_prompts([p / "bbh_navigate_prompts.csv", p / "bbh_snarks_prompts.csv"])


def test_variants_draw_demos_outside_the_evaluated_items(data_dir):
    prompts = _bbh(data_dir)
    tables = few_shot_variants(prompts, k=3, shots=2, limit=20, seed=0)
    assert [len(t) for t in tables] == [40, 40, 40]
    for t in tables:
        for g, rows in t.groupby("subgroup"):
            evaluated = set(rows["prompt"])
            demos = json.loads(rows["shots"].iloc[0])
            assert len(demos) == 2 and rows["shots"].nunique() == 1  # one draw per (variant, subgroup)
            assert not evaluated & {p for p, _ in demos}
            src = prompts[prompts["subgroup"] == g].set_index("prompt")["target"]
            assert all(src[p] == a for p, a in demos)  # demonstrations carry their real answers
    # the variants differ in their draw, deterministically given the seed
    assert tables[0]["shots"].iloc[0] != tables[1]["shots"].iloc[0]
    again = few_shot_variants(prompts, k=3, shots=2, limit=20, seed=0)
    assert all(a["shots"].equals(b["shots"]) for a, b in zip(tables, again))
    with pytest.raises(DataError, match="fewer than shots"):
        few_shot_variants(prompts, k=1, shots=3, limit=249)


def test_shots_are_sent_as_chat_turns_and_graded_on_the_item_alone(tmp_path):
    df = pd.DataFrame({"instance_id": ["a", "b"], "prompt": ["Q1?", "Q2?"], "target": ["yes", "no"],
                       "subgroup": ["t", "t"], "shots": [json.dumps([["D?", "yes"]])] * 2})
    fake = FakeEndpoint({"Q1?": "yes", "Q2?": "yes"})
    res, _ = _onboarder(system_prompt="S").run(df, tmp_path / "o", http_client=fake.client())
    roles = [[m["role"] for m in b["messages"]] for b in fake.bodies]
    assert roles == [["system", "user", "assistant", "user"]] * 2
    assert fake.bodies[0]["messages"][1:3] == [{"role": "user", "content": "D?"}, {"role": "assistant", "content": "yes"}]
    np.testing.assert_array_equal(res.success[0], [1, 0])
    assert "shots" not in res.instances.columns
    bad = df.assign(shots='[["only-one"]]')
    with pytest.raises(DataError, match="shots must be"):
        _onboarder().run(bad, tmp_path / "bad", http_client=fake.client())


def test_combine_gives_a_long_table_the_table_loader_reads_with_subgroups(tmp_path):
    df = pd.DataFrame({"instance_id": ["a", "b", "c"], "prompt": ["Q1?", "Q2?", "Q3?"],
                       "target": ["yes", "no", "no"], "subgroup": ["t1", "t1", "t2"]})
    fake = FakeEndpoint({"Q1?": "yes", "Q2?": "yes", "Q3?": "no"})
    dirs = []
    for v in range(2):
        _onboarder().run(df, tmp_path / f"v{v}", http_client=fake.client())
        dirs.append(tmp_path / f"v{v}")
    table = combine(dirs, ["m#v0", "m#v1"])
    assert list(table.columns) == ["llm", "instance_id", "subgroup", "success", "confidence"]
    path = tmp_path / "conf.csv"
    table.to_csv(path, index=False)
    res = load_table(path)
    assert res.llms == ["m#v0", "m#v1"] and list(res.instances["subgroup"]) == ["t1", "t1", "t2"]
    np.testing.assert_array_equal(res.success, [[1, 0, 1], [1, 0, 1]])
    assert res.confidence is not None and np.isfinite(res.confidence).all()
    clash = pd.concat([table, table.head(1).assign(llm="x", subgroup="t2")])
    clash.to_csv(path, index=False)
    with pytest.raises(DataError, match="more than one subgroup"):
        load_table(path)


def test_split_chat_prompt():
    assert split_chat_prompt("system: Be brief.\nuser: Is it?\n") == ("Be brief.", "Is it?")
    assert split_chat_prompt("plain") == (None, "plain")
    assert split_chat_prompt("system: s\nuser: u\nassistant: a\nuser: v")[0] is None


def test_variants_preset_writes_prompt_files_onboarding_reads(compose, data_dir, tmp_path, capsys):
    from assessors.tasks.variants import run

    p = data_dir / "open_llm_leaderboard_v2" / "prompts" / "bbh_navigate_prompts.csv"
    written = run(compose(["experiment=variants", f"variants.prompts=[{p}]", "variants.k=2", "variants.limit=5",
                           f"variants.out={tmp_path / 'v'}"]))["written"]
    assert [Path(w).name for w in written] == ["v0.jsonl", "v1.jsonl"]
    back = read_prompts([written[1]])
    assert len(back) == 5 and set(back["subgroup"]) == {"bbh_navigate"} and back["shots"].notna().all()
    assert sorted(f.name for f in (tmp_path / "v").iterdir()) == ["v0.jsonl", "v1.jsonl"]  # no temp files
