"""RouterBench and score-matrix loaders on the real files, with their bad-input errors."""
from __future__ import annotations

import logging

import numpy as np
import pytest

from assessors.data.loaders.routerbench import decode_list_literal, load_routerbench
from assessors.data.loaders.score_matrix import load_score_matrix
from assessors.errors import DataError


def test_routerbench_full(data_dir, caplog):
    with caplog.at_level(logging.WARNING, logger="assessors.data"):
        r = load_routerbench(root=data_dir)
    assert r.shape == (11, 3178)
    assert "gpt-4-1106-preview" in r.llms and "claude-v2" in r.llms
    assert not np.isnan(r.cost).any() and (r.cost > 0).all()
    assert set(r.instances["routerbench_split"]) == {"train", "test"}
    assert set(r.instances["subgroup"]) == {"arc-challenge", "mbpp", "winogrande"}
    assert r.instances["oracle_model_to_route_to"].isin([*r.llms, "no_model_correct"]).all()
    assert int(np.isnan(r.success).sum()) == 154  # upstream rows with missing scores stay NaN
    assert r.instances.index.str.contains("#").sum() == 28  # 14 duplicated sample_ids, all rows kept
    assert any("duplicated sample_ids" in m for m in caplog.messages)
    assert len(r.responses) == 11 * 3178
    # the gpt-4 accuracy is the highest on this subset
    assert r.accuracy().idxmax() == "gpt-4-1106-preview"


def test_routerbench_prompts_are_decoded(data_dir):
    r = load_routerbench(root=data_dir, datasets=["mbpp"], splits=["test"])
    assert r.shape == (11, 128)
    p = r.instances.loc["mbpp.dev.1", "prompt"]
    assert p == "Write a python function to identify non-prime numbers."
    assert decode_list_literal("['a', 'b']") == "a\nb" and decode_list_literal("[not a list") == "[not a list"


def test_routerbench_non_binary_and_truncated(copy_files):
    root = copy_files("routerbench/mbpp_test.csv")
    path = root / "routerbench" / "mbpp_test.csv"
    import pandas as pd

    frame = pd.read_csv(path)
    frame.loc[3, "claude-v2"] = 0.5
    frame.to_csv(path, index=False)
    with pytest.raises(DataError, match=r"mbpp_test.csv: non-binary success value 0.5 at line 5 .*column 'claude-v2'"):
        load_routerbench(root=root, datasets=["mbpp"], splits=["test"])
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])
    with pytest.raises(DataError, match="mbpp_test.csv"):
        load_routerbench(root=root, datasets=["mbpp"], splits=["test"])


def test_score_matrix_named_and_anonymous(data_dir, caplog):
    with caplog.at_level(logging.WARNING, logger="assessors.data"):
        r = load_score_matrix("musr", root=data_dir)
    assert r.shape == (429, 756)  # 448 rows upstream, 19 exact repeats dropped (and logged)
    assert any("dropped 19 rows" in m for m in caplog.messages)
    assert r.llms[0] == "01-ai/Yi-1.5-34B" and r.instances["prompt"].isna().all()
    a = load_score_matrix("rte", root=data_dir)
    assert a.shape == (87, 277) and a.llms[:2] == ["model_000", "model_001"]
    raw = np.load(data_dir / "score_matrices" / "rte.npz")["scores"]
    np.testing.assert_array_equal(a.success, raw.astype(np.float32))
    with pytest.raises(DataError, match="prompt features were requested"):
        a.require_prompts()


def test_score_matrix_bad_files(copy_files, tmp_path):
    root = copy_files("score_matrices/rte.npz")
    path = root / "score_matrices" / "rte.npz"
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(DataError, match="rte.npz: truncated or corrupt npz"):
        load_score_matrix("rte", root=root)
    bad = np.zeros((3, 4), np.uint8)
    bad[1, 2] = 7
    np.savez(root / "score_matrices" / "bad.npz", scores=bad)
    with pytest.raises(DataError, match=r"bad.npz: non-binary success value 7.0 at row 'model_001', column 2"):
        load_score_matrix("bad", root=root)
    np.savez(root / "score_matrices" / "pickled.npz", scores=np.array([[{"x": 1}]], dtype=object))
    with pytest.raises(DataError, match="pickled.npz: truncated or corrupt npz"):
        load_score_matrix("pickled", root=root)
    with pytest.raises(DataError, match="not found; available"):
        load_score_matrix("nope", root=root)
