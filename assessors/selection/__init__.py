"""Reference selectors (``conf/selector/``)."""
from assessors.selection.base import RandomSelector, Selector

__all__ = ["Selector", "RandomSelector"]
