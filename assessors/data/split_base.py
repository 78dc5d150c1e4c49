"""Base classes for instance and LLM splits: one abstract ``_split``, the checks done once here.

A split maps a :class:`~assessors.data.results.Results` to ``{"train": [...], "val": [...],
"test": [...]}`` (instance ids for instance splits, LLM names for LLM splits). Every part must be
non-empty, parts must be disjoint, and every name must exist in the results.
"""
from __future__ import annotations

import fnmatch
import logging
from abc import ABC, abstractmethod
from typing import Sequence

from assessors.data.names import check_unique
from assessors.data.results import Results
from assessors.errors import ConfigError

log = logging.getLogger("assessors.data")

PARTS = ("train", "val", "test")


class _Split(ABC):
    kind = "item"

    def split(self, results: Results) -> dict[str, list[str]]:
        """Return ``{"train": [...], "val": [...], "test": [...]}``, deterministic given the params."""
        universe = self._universe(results)
        parts = self._split(results)
        return check_parts(parts, universe, type(self).__name__, self.kind)

    @abstractmethod
    def _split(self, results: Results) -> dict[str, list[str]]:
        """Compute the three parts (validated by :meth:`split`)."""

    @abstractmethod
    def _universe(self, results: Results) -> list[str]:
        """All names this split may assign."""

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.endswith("_"))
        return f"{type(self).__name__}({params})"


class InstanceSplit(_Split):
    """Splits instance ids into train / val / test."""

    kind = "instance"

    def _universe(self, results: Results) -> list[str]:
        return results.instance_ids


class LLMSplit(_Split):
    """Splits LLM names into train / val / test."""

    kind = "LLM"

    def _universe(self, results: Results) -> list[str]:
        return list(results.llms)


def check_parts(parts: dict, universe: Sequence[str], who: str, kind: str) -> dict[str, list[str]]:
    """Validate a split: exactly the three parts, non-empty, disjoint, known names."""
    if set(parts) != set(PARTS):
        raise ConfigError(f"{who}: split must have parts {PARTS}, got {sorted(parts)}")
    out = {p: [str(x) for x in parts[p]] for p in PARTS}
    known = set(universe)
    for p in PARTS:
        _check_part(out, p, known, who, kind)
    for i, a in enumerate(PARTS):
        for b in PARTS[i + 1:]:
            both = set(out[a]) & set(out[b])
            if both:
                raise ConfigError(f"{who}: {kind}s in both {a} and {b}: {sorted(both)[:5]}")
    unused = len(known) - sum(len(v) for v in out.values())
    if unused:
        log.info("%s: %d of %d %ss are in no part", who, unused, len(known), kind)
    return out


def _check_part(out: dict[str, list[str]], p: str, known: set, who: str, kind: str) -> None:
    """Part ``p`` of a split: non-empty, known names, no name twice."""
    if not out[p]:
        raise ConfigError(f"{who}: the {p} part is empty ({', '.join(f'{q}={len(out[q])}' for q in PARTS)} "
                          f"{kind}s of {len(known)})")
    unknown = [x for x in out[p] if x not in known]
    if unknown:
        raise ConfigError(f"{who}: unknown {kind} name(s) in {p}: {unknown[:5]}")
    check_unique(out[p], f"{who}: the {p} part", f"{kind} name", lambda i: f"position {i}", error=ConfigError)


def match(names: Sequence[str], patterns: Sequence[str] | str | None, who: str, what: str) -> list[str]:
    """Names matching any exact name or glob in ``patterns`` (in ``names`` order).

    Raises ConfigError for a pattern that matches nothing, listing the available names.
    """
    if patterns is None:
        return []
    patterns = [patterns] if isinstance(patterns, str) else [str(p) for p in patterns]
    out = []
    for p in patterns:
        hits = [n for n in names if fnmatch.fnmatchcase(n, p)]
        if not hits:
            shown = sorted(set(names))
            raise ConfigError(f"{who}: {what} {p!r} matches nothing; available: "
                              f"{shown[:40]}{' ...' if len(shown) > 40 else ''}")
        out.extend(h for h in hits if h not in out)
    order = {n: i for i, n in enumerate(names)}
    return sorted(out, key=order.__getitem__)


def split_sizes(n: int, fractions: Sequence[float], who: str) -> tuple[int, int, int]:
    """Turn (train, val, test) fractions into counts summing to ``n`` (train takes the rounding)."""
    if len(fractions) != 3 or any(f < 0 for f in fractions):
        raise ConfigError(f"{who}: fractions must be three non-negative numbers, got {list(fractions)}")
    total = float(sum(fractions))
    if abs(total - 1.0) > 1e-6:
        raise ConfigError(f"{who}: fractions must sum to 1, got {list(fractions)} (sum {total})")
    n_val = int(round(fractions[1] * n))
    n_test = int(round(fractions[2] * n))
    return n - n_val - n_test, n_val, n_test
