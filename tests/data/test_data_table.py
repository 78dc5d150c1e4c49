"""The documented user table format (long / wide, CSV / Parquet), built from real results."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from assessors.data.loaders.open_llm_leaderboard_v2 import load_open_llm_leaderboard_v2
from assessors.data.loaders.table import load_table
from assessors.errors import DataError


@pytest.fixture(scope="module")
def snarks(data_dir):
    return load_open_llm_leaderboard_v2(root=data_dir, subtasks=["bbh_snarks"])


def _prompts(res) -> pd.DataFrame:
    return res.instances.reset_index()[["instance_id", "prompt", "subgroup", "target"]]


@pytest.mark.parametrize("ext", ["csv", "parquet"])
@pytest.mark.parametrize("fmt", ["long", "wide"])
def test_round_trip(snarks, tmp_path, ext, fmt):
    if fmt == "long":
        table = snarks.to_long()
    else:
        table = pd.DataFrame(snarks.success, index=pd.Index(snarks.llms, name="llm"),
                             columns=snarks.instance_ids).reset_index()
    prompts = _prompts(snarks)
    rp, pp = tmp_path / f"results.{ext}", tmp_path / f"prompts.{ext}"
    if ext == "csv":
        table.to_csv(rp, index=False)
        prompts.to_csv(pp, index=False)
    else:
        table.to_parquet(rp, index=False)
        prompts.to_parquet(pp, index=False)
    r = load_table(rp, pp, format=fmt)
    assert r.llms == snarks.llms and r.instance_ids == snarks.instance_ids
    np.testing.assert_array_equal(r.success, snarks.success)
    assert r.has_prompts and (r.instances["prompt"] == snarks.instances["prompt"]).all()


def test_optional_cost_and_missing_cells(tmp_path):
    pd.DataFrame({"llm": ["a", "a", "b"], "instance_id": ["q1", "q2", "q1"], "success": [1, 0, "true"],
                  "cost": [0.1, 0.2, 0.3]}).to_csv(tmp_path / "r.csv", index=False)
    r = load_table(tmp_path / "r.csv")
    assert r.shape == (2, 2) and np.isnan(r.success[1, 1]) and r.success[1, 0] == 1
    assert r.cost[0, 1] == pytest.approx(0.2)
    with pytest.raises(DataError, match="prompt features were requested"):
        r.require_prompts()


def test_bad_inputs(tmp_path):
    p = tmp_path / "r.csv"
    pd.DataFrame({"llm": ["a", "a"], "instance_id": ["q1", "q2"], "success": [1, 2]}).to_csv(p, index=False)
    with pytest.raises(DataError, match=r"r.csv: non-binary success value \S*2\S* at row 1, column 'success'"):
        load_table(p)
    pd.DataFrame({"llm": ["a", "a"], "instance_id": ["q1", "q1"], "success": [1, 0]}).to_csv(p, index=False)
    with pytest.raises(DataError, match=r"duplicated \(llm, instance_id\) pair \('a', 'q1'\)"):
        load_table(p)
    pd.DataFrame({"llm": ["a"], "instance_id": ["q1"], "success": [1]}).to_csv(p, index=False)
    pp = tmp_path / "p.csv"
    pd.DataFrame({"instance_id": ["q1", "q1"], "prompt": ["x", "y"]}).to_csv(pp, index=False)
    with pytest.raises(DataError, match="p.csv: duplicated instance_id 'q1' at data row 2 \\(first at data row 1"):
        load_table(p, pp)
    pd.DataFrame({"instance_id": ["q9"], "prompt": ["x"]}).to_csv(pp, index=False)
    with pytest.raises(DataError, match="not in the prompts table"):
        load_table(p, pp)
    with pytest.raises(DataError, match="missing column 'success'"):
        pd.DataFrame({"llm": ["a"], "instance_id": ["q1"]}).to_csv(p, index=False)
        load_table(p)


def test_truncated_parquet(snarks, tmp_path):
    path = tmp_path / "r.parquet"
    snarks.to_long().to_parquet(path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(DataError, match="r.parquet: truncated or corrupt Parquet"):
        load_table(path)
