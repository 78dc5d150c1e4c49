"""Every conf/<group>/*.yaml composes and instantiates (the config group is the registry)."""
from __future__ import annotations

from pathlib import Path

import pytest
from hydra.utils import instantiate

CONF = Path(__file__).resolve().parent.parent / "conf"
# Groups whose options are components with a _target_ (experiment/hydra presets are not).
COMPONENT_GROUPS = ["data", "split", "llm_split", "features", "selector", "classifier", "assessor", "tracking",
                    "estimator", "router", "onboarding", "trust", "task_calibration"]
# Option files that hold keyword arguments for a function, not a component.
OPTION_FILES = {"trust/report"}
# Loaders read files when called; composing and resolving their target is the cheap check here
# (tests/data calls every loader on the real files).
CALL_ONLY_TARGET = {"data"}


def _options():
    for group in COMPONENT_GROUPS:
        for f in sorted((CONF / group).glob("*.yaml")):
            if f"{group}/{f.stem}" in OPTION_FILES:
                continue
            yield pytest.param(group, f.stem, id=f"{group}/{f.stem}")


@pytest.mark.parametrize("group,option", list(_options()))
def test_option_instantiates(compose, group, option):
    node = compose([f"+{group}@probe={option}"]).probe
    assert "_target_" in node, f"conf/{group}/{option}.yaml names no _target_"
    if group in CALL_ONLY_TARGET:
        from hydra._internal.utils import _locate

        assert callable(_locate(node._target_))
        return
    obj = instantiate(node)
    assert obj is not None


def test_default_train_config_composes(compose):
    cfg = compose()
    assert cfg.data._target_.endswith("load_open_llm_leaderboard_v2")
    assert cfg.selector.size == 100
    assert cfg.task._target_ == "assessors.tasks.train.train_assessors"
