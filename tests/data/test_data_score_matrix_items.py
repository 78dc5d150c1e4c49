"""musr.npz joined to the MuSR prompt files: width and item-order checks on the real files."""
from __future__ import annotations

import logging

import numpy as np
import pytest

from assessors.data.loaders.open_llm_leaderboard_v2 import load_open_llm_leaderboard_v2
from assessors.data.loaders.score_matrix import load_score_matrix
from assessors.data.results import Results
from assessors.errors import DataError


@pytest.fixture(scope="module")
def musr_items(data_dir):
    return load_open_llm_leaderboard_v2(root=data_dir, subtasks=["musr_*"])


def test_musr_matrix_gets_the_prompt_files_items_in_order(data_dir, musr_items, caplog):
    with caplog.at_level(logging.INFO, logger="assessors.data"):
        r = load_score_matrix("musr", root=data_dir, items=musr_items)
    assert r.shape == (429, 756) and r.has_prompts
    assert r.instance_ids[0] == "musr_murder_mysteries/0" and r.instance_ids[250].startswith("musr_object_placements/")
    assert r.instance_ids == musr_items.instance_ids
    assert r.instances["subgroup"].value_counts().to_dict() == {
        "musr_murder_mysteries": 250, "musr_object_placements": 256, "musr_team_allocation": 250}
    raw = np.load(data_dir / "score_matrices" / "musr.npz")
    np.testing.assert_array_equal(r.success[0], raw["scores"][0])  # values untouched, only labelled
    # 16 LLMs are in both sources: 8 agree on every item, and the 8 whose leaderboard CSV rows are in
    # another item order (70B-class LLMs) are named in a warning, not averaged in silently
    agree = r.meta["item_order_check"]
    assert len(agree) == 16 and sum(a == 1.0 for a in agree.values()) == 8
    assert max(a for a in agree.values() if a < 1) < 0.6
    warning = next(m for m in caplog.messages if "disagree" in m)
    assert "Qwen/Qwen2.5-72B-Instruct" in warning and "lmsys/vicuna-7b-v1.5" not in warning


def test_width_that_does_not_match_the_prompt_files_is_an_error(data_dir):
    two = load_open_llm_leaderboard_v2(root=data_dir, subtasks=["musr_murder_mysteries", "musr_team_allocation"])
    with pytest.raises(DataError, match=r"musr.npz: 756 score columns, but open_llm_leaderboard_v2 has 500 items"):
        load_score_matrix("musr", root=data_dir, items=two)


def test_same_width_in_another_order_is_an_error(data_dir, musr_items):
    perm = np.random.default_rng(0).permutation(len(musr_items.instances))
    shuffled = Results(instances=musr_items.instances.iloc[perm], llms=musr_items.llms,
                       success=musr_items.success[:, perm], name="shuffled MuSR")
    with pytest.raises(DataError, match=r"does not match shuffled MuSR: none of the 16 LLMs .* misaligned"):
        load_score_matrix("musr", root=data_dir, items=shuffled)


def test_config_option_composes_to_the_joined_loader(compose):
    from hydra.utils import instantiate

    cfg = compose(["data=score_matrix_musr"])
    r = instantiate(cfg.data)
    assert r.shape == (429, 756) and r.has_prompts
