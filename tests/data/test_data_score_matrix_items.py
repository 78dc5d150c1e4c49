"""musr.npz joined to the MuSR prompt files: width and item-order checks on the real files."""
from __future__ import annotations

import logging

import numpy as np
import pytest

from assessors.data.loaders.open_llm_leaderboard_v2 import load_open_llm_leaderboard_v2
from assessors.data.item_order import interleaved_positions, to_true_order
from assessors.data.loaders.score_matrix import load_score_matrix
from assessors.data.results import Results
from assessors.errors import DataError


@pytest.fixture(scope="module")
def musr_items(data_dir):
    return load_open_llm_leaderboard_v2(root=data_dir, subtasks=["musr_*"])


def test_musr_matrix_gets_the_prompt_files_items_in_order(data_dir, musr_items, caplog):
    with caplog.at_level(logging.INFO, logger="assessors.data"):
        r = load_score_matrix("musr", root=data_dir, items=musr_items)
    # 429 distinct rows; 6 near-chance ones whose item order cannot be told are dropped by name
    assert r.shape == (423, 756) and r.has_prompts
    assert len(r.meta["item_order"]["excluded"]) == 6 and "google/flan-t5-small" in r.meta["item_order"]["excluded"]
    assert r.instance_ids[0] == "musr_murder_mysteries/0" and r.instance_ids[250].startswith("musr_object_placements/")
    assert r.instance_ids == musr_items.instance_ids
    assert r.instances["subgroup"].value_counts().to_dict() == {
        "musr_murder_mysteries": 250, "musr_object_placements": 256, "musr_team_allocation": 250}
    raw = np.load(data_dir / "score_matrices" / "musr.npz")
    # every row was written by 8 processes: re-keyed, not just labelled
    first = next(i for i, m in enumerate(raw["models"]) if str(m) == r.llms[0])
    written = raw["scores"][first].astype(float)
    expect = np.concatenate([to_true_order(written[a:b], 8)[interleaved_positions(b - a, 2)]
                             for a, b in [(0, 250), (250, 506), (506, 756)]])
    np.testing.assert_array_equal(r.success[0], expect)
    # the 16 LLMs in both sources agree on every item once both are re-keyed
    agree = r.meta["item_order_check"]
    assert len(agree) == 16 and min(agree.values()) == 1.0
    assert any("re-keyed" in m for m in caplog.messages)


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
    # 429 distinct rows; 6 near-chance ones whose item order cannot be told are dropped by name
    assert r.shape == (423, 756) and r.has_prompts
    assert len(r.meta["item_order"]["excluded"]) == 6 and "google/flan-t5-small" in r.meta["item_order"]["excluded"]
