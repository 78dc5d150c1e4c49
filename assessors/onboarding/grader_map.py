"""Choose a grader per subgroup (dataset/subtask) from a glob -> grader mapping."""
from __future__ import annotations

import fnmatch
from typing import Mapping

from assessors.errors import ConfigError
from assessors.onboarding.graders import Grader


def _specificity(pattern: str) -> int:
    """Number of literal characters: ``bbh_object_counting`` beats ``bbh_*`` beats ``*``."""
    return sum(ch not in "*?[]" for ch in pattern)


class GraderMap:
    """Subgroup name -> :class:`Grader`, configured as ``{glob: grader}``.

    Resolution: an exact key wins; otherwise the matching glob with the most literal
    characters (ties: first in the mapping). Matching is case-insensitive.

    Parameters
    ----------
    graders : mapping of str to Grader
        E.g. ``{"*object_counting": NumericAnswer(), "bbh_*": MultipleChoiceLetter()}``.
    default : Grader, optional
        Used when no pattern matches (and for a missing subgroup); None raises ConfigError.
    """

    def __init__(self, graders: Mapping[str, Grader], default: Grader | None = None):
        self.graders = graders
        self.default = default
        for key, g in dict(graders).items():
            if not isinstance(g, Grader):
                raise ConfigError(f"onboarding.graders[{key!r}] is {type(g).__name__}, not a Grader "
                                  "(give it a _target_ in assessors.onboarding.graders)")

    def for_subgroup(self, subgroup: str | None) -> Grader:
        """The grader for ``subgroup``; raises ConfigError when none applies."""
        items = list(dict(self.graders).items())
        if subgroup is not None and subgroup == subgroup:  # NaN-safe
            name = str(subgroup).lower()
            exact = [g for k, g in items if k.lower() == name]
            if exact:
                return exact[0]
            hits = [(-_specificity(k), i, g) for i, (k, g) in enumerate(items) if fnmatch.fnmatchcase(name, k.lower())]
            if hits:
                return min(hits, key=lambda h: h[:2])[2]
        if self.default is None:
            raise ConfigError(f"no grader matches subgroup {subgroup!r}; patterns are "
                              f"{[k for k, _ in items]} (add one, or set onboarding.graders.default)")
        return self.default

    def __repr__(self) -> str:
        return f"GraderMap({dict(self.graders)!r}, default={self.default!r})"
