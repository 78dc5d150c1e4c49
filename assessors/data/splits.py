"""All splits in one import: ``from assessors.data.splits import RandomInstanceSplit, RandomLLMSplit``.

Instance splits live in :mod:`assessors.data.instance_splits`, LLM splits in
:mod:`assessors.data.llm_splits`, the shared checks in :mod:`assessors.data.split_base`.
Each has ``split(results) -> {"train": [...], "val": [...], "test": [...]}``.
"""
from assessors.data.instance_splits import HoldoutGroupsSplit, PredefinedSplit, RandomInstanceSplit
from assessors.data.llm_splits import ExplicitLLMSplit, FamilyLLMSplit, FrontierLLMSplit, RandomLLMSplit
from assessors.data.split_base import InstanceSplit, LLMSplit

__all__ = ["InstanceSplit", "LLMSplit", "RandomInstanceSplit", "HoldoutGroupsSplit", "PredefinedSplit",
           "RandomLLMSplit", "ExplicitLLMSplit", "FamilyLLMSplit", "FrontierLLMSplit"]
