"""Instance and LLM splits: determinism, disjointness, OOD holdouts, frontier ordering, errors, configs."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hydra.utils import instantiate
from omegaconf import OmegaConf

from assessors.data.results import Results
from assessors.data.splits import (ExplicitLLMSplit, FamilyLLMSplit, FrontierLLMSplit, HoldoutGroupsSplit,
                                   PredefinedSplit, RandomInstanceSplit, RandomLLMSplit)
from assessors.errors import ConfigError, DataError

CONF = Path(__file__).resolve().parents[2] / "conf"


def _check_partition(parts, universe, exhaustive=True):
    sets = [set(parts[p]) for p in ("train", "val", "test")]
    assert all(sets) and not (sets[0] & sets[1]) and not (sets[0] & sets[2]) and not (sets[1] & sets[2])
    if exhaustive:
        assert set.union(*sets) == set(universe)


def test_random_instance_split_paper_fractions(bbh_musr):
    s = RandomInstanceSplit(seed=3)
    parts = s.split(bbh_musr)
    _check_partition(parts, bbh_musr.instance_ids)
    n = 6517
    assert len(parts["test"]) == round(0.30 * n) and len(parts["val"]) == round(0.14 * n)
    assert parts == RandomInstanceSplit(seed=3).split(bbh_musr)
    assert parts["test"] != RandomInstanceSplit(seed=4).split(bbh_musr)["test"]


def test_stratified_split_keeps_subgroup_shares(bbh_musr):
    parts = RandomInstanceSplit(seed=0, stratify=True).split(bbh_musr)
    _check_partition(parts, bbh_musr.instance_ids)
    groups = bbh_musr.instances["subgroup"]
    share = groups.loc[parts["test"]].value_counts() / groups.value_counts()
    assert share.between(0.28, 0.32).all()


def test_holdout_musr(bbh_musr):
    parts = HoldoutGroupsSplit(["musr_*"], val_fraction=0.2, seed=0).split(bbh_musr)
    _check_partition(parts, bbh_musr.instance_ids)
    g = bbh_musr.instances["subgroup"]
    assert g.loc[parts["test"]].str.startswith("musr_").all()
    assert not g.loc[parts["train"] + parts["val"]].str.startswith("musr_").any()
    assert len(parts["test"]) == int(g.str.startswith("musr_").sum())
    assert abs(len(parts["val"]) - 0.2 * (6517 - len(parts["test"]))) <= 1
    with pytest.raises(ConfigError, match="'bbh_nope' matches nothing"):
        HoldoutGroupsSplit(["bbh_nope"]).split(bbh_musr)


@pytest.mark.parametrize("option", ["random", "predefined", "ood_musr", "ood_logic", "ood_language", "ood_algorithmic"])
def test_split_configs_instantiate(option, bbh_musr):
    cfg = OmegaConf.merge({"seed": 0}, {"split": OmegaConf.load(CONF / "split" / f"{option}.yaml")})
    split = instantiate(cfg.split)
    if option == "predefined":
        with pytest.raises(DataError, match="no instance column 'Random_split'"):
            split.split(bbh_musr)
        return
    _check_partition(split.split(bbh_musr), bbh_musr.instance_ids)


def _tiny(n_llms=6, n_items=10, extra=None):
    rng = np.random.default_rng(0)
    inst = pd.DataFrame({"subgroup": ["a"] * (n_items // 2) + ["b"] * (n_items - n_items // 2)},
                        index=[f"i{j}" for j in range(n_items)])
    for k, v in (extra or {}).items():
        inst[k] = v
    return Results(instances=inst, llms=[f"m{i}" for i in range(n_llms)],
                   success=(rng.random((n_llms, n_items)) < 0.5).astype(np.float32))


def test_predefined_split_values():
    col = ["train", "validation", "test", "train", None, "train", "test", "validation", "train", "test"]
    r = _tiny(extra={"Random_split": col})
    parts = PredefinedSplit().split(r)
    assert parts == {"train": ["i0", "i3", "i5", "i8"], "val": ["i1", "i7"], "test": ["i2", "i6", "i9"]}
    r2 = _tiny(extra={"Random_split": ["train", "dev"] * 5})
    with pytest.raises(DataError, match=r"column 'Random_split' has value\(s\) \['dev'\]"):
        PredefinedSplit().split(r2)


def test_random_llm_split_default_and_generalises(bbh_musr):
    parts = RandomLLMSplit(seed=0).split(bbh_musr)
    assert [len(parts[p]) for p in ("train", "val", "test")] == [49, 10, 18]  # 77 LLMs
    _check_partition(parts, bbh_musr.llms)
    assert parts == RandomLLMSplit(seed=0).split(bbh_musr)
    small = _tiny(n_llms=14)
    sizes = [len(v) for v in RandomLLMSplit(seed=0).split(small).values()]
    assert sum(sizes) == 14 and min(sizes) >= 1
    parts = RandomLLMSplit(n_val=2, n_test=3, seed=1).split(small)
    assert [len(parts[p]) for p in ("train", "val", "test")] == [9, 2, 3]
    with pytest.raises(ConfigError, match="do not fit"):
        RandomLLMSplit(n_train=10, n_val=3, n_test=3).split(small)
    with pytest.raises(ConfigError, match="test part is empty"):
        RandomLLMSplit(fractions=(0.9, 0.1, 0.0)).split(small)


def test_explicit_and_kor_split(data_dir):
    from assessors.data.loaders.openai_evals import load_openai_evals

    r = load_openai_evals(root=data_dir, datasets=["causal_judgment"])
    kor = instantiate(OmegaConf.load(CONF / "llm_split" / "kor.yaml")).split(r)
    assert len(kor["train"]) == 8 and kor["val"] == ["gpt-3.5-turbo-0125", "text-davinci-003"]
    assert sorted(kor["test"]) == ["gpt-4-0125-preview", "gpt-4-0314", "gpt-4-0613", "gpt-4-1106-preview"]
    _check_partition(kor, r.llms)
    glob = ExplicitLLMSplit(train=None, val=["text-davinci-003", "gpt-3.5-turbo-0125"], test=["gpt-4-*"]).split(r)
    assert glob == kor
    with pytest.raises(ConfigError, match="in both train and test"):
        ExplicitLLMSplit(train=["gpt-*"], val=["text-ada-001"], test=["gpt-4-*"]).split(r)
    with pytest.raises(ConfigError, match="'claude-\\*' matches nothing"):
        ExplicitLLMSplit(val=["text-ada-001"], test=["claude-*"]).split(r)
    with pytest.raises(ConfigError, match="val part is empty"):
        instantiate(OmegaConf.load(CONF / "llm_split" / "explicit.yaml")).split(r)


def test_family_split(bbh_musr):
    parts = FamilyLLMSplit(val_prefixes=["Qwen__"], test_prefixes=["MaziyarPanahi__"]).split(bbh_musr)
    _check_partition(parts, bbh_musr.llms)
    assert all(m.startswith("MaziyarPanahi__") for m in parts["test"]) and len(parts["test"]) >= 5
    assert not any(m.startswith(("Qwen__", "MaziyarPanahi__")) for m in parts["train"])
    with pytest.raises(ConfigError, match="prefix 'nobody__' matches no LLM"):
        FamilyLLMSplit(val_prefixes=["Qwen__"], test_prefixes=["nobody__"]).split(bbh_musr)


def test_frontier_orders_by_accuracy(bbh_musr):
    parts = FrontierLLMSplit(n_test=18, n_val=10).split(bbh_musr)
    _check_partition(parts, bbh_musr.llms)
    acc = bbh_musr.accuracy()
    assert acc[parts["test"]].min() >= acc[parts["val"]].max() >= acc[parts["train"]].max()
    assert len(parts["train"]) == 49  # 77 LLMs
    with pytest.raises(ConfigError, match="do not fit"):
        FrontierLLMSplit(n_test=70, n_val=10).split(bbh_musr)
