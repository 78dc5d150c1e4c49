"""Featurizers (``conf/features/``): prompts -> float32 matrices, cached on disk."""
from assessors.features.base import Featurizer

__all__ = ["Featurizer"]
