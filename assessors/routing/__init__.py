"""Routing: choose an LLM per prompt from assessor predictions and costs (``conf/router/``)."""
from assessors.routing.base import ABSTAIN, Router, Routing
from assessors.routing.costs import CostModel
from assessors.routing.registry import LLMRegistry, RegisteredLLM, UnknownLLMError

__all__ = ["ABSTAIN", "CostModel", "LLMRegistry", "RegisteredLLM", "Router", "Routing", "UnknownLLMError"]
