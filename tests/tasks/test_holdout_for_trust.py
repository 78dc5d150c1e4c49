"""Validation prompts held out of the assessor's fit for the trust policy: a seeded partition, off by default."""
from __future__ import annotations

import pytest

from assessors.errors import ConfigError
from assessors.tasks.prepare import held_out_for_trust


def test_a_seeded_share_of_the_validation_prompts_moves_to_its_own_part():
    inst = {"train": ["a", "b"], "val": [f"v{i}" for i in range(10)], "test": ["t"]}
    out = held_out_for_trust(inst, 0.3, seed=1)
    assert len(out["trust"]) == 3 and len(out["val"]) == 7
    assert sorted(out["val"] + out["trust"]) == sorted(inst["val"])
    assert out["train"] == inst["train"] and out["test"] == inst["test"]
    assert held_out_for_trust(inst, 0.3, seed=1) == out and held_out_for_trust(inst, 0.3, seed=2) != out
    assert held_out_for_trust(inst, 0.0, seed=1) is inst


@pytest.mark.parametrize("share", [1.0, -0.1, 0.01])
def test_a_share_that_leaves_a_side_empty_is_a_clear_error(share):
    with pytest.raises(ConfigError, match="trust.holdout_prompts"):
        held_out_for_trust({"val": [f"v{i}" for i in range(10)]}, share, seed=0)


def test_the_trust_policy_is_chosen_on_the_held_out_prompts_when_there_are_any(compose, data_dir):
    from assessors.tasks.prepare import prepare
    from assessors.tasks.train_trust import trust_part

    over = [f"paths.data_dir={data_dir}", "data.subtasks=[bbh_navigate]", "features=unigram",
            "features.max_features=50", "llm_split.n_train=10", "llm_split.n_val=4", "llm_split.n_test=2"]
    prep = prepare(compose([*over, "trust.holdout_prompts=0.5"]))
    assert trust_part(prep) == "trust" and len(prep.X["trust"]) == len(prep.inst["trust"]) > 0
    assert abs(len(prep.inst["trust"]) - len(prep.inst["val"])) <= 1
    assert trust_part(prepare(compose(over))) == "val"
