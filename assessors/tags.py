"""Capabilities of the project's components, declared as scikit-learn estimator tags.

A component declares what the pipeline may ask of it by overriding ``__sklearn_tags__``
(scikit-learn >= 1.6) and extending the tags its parent returns::

    def __sklearn_tags__(self):
        return with_capabilities(super().__sklearn_tags__(), accepts_row_source=True)

and the pipeline reads one flag with :func:`capability`. The standard scikit-learn tags stay
where scikit-learn puts them (e.g. ``get_tags(est).input_tags.allow_nan`` for an estimator that
accepts missing values), so the project adds only what scikit-learn has no tag for.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields, replace

from sklearn.utils import Tags, get_tags


@dataclass(slots=True)
class Capabilities:
    """The project's own capability flags (all False unless a component sets them).

    What every member of a role has is not a capability but part of the role's protocol (a
    featurizer's ``reads``, a selector's ``fit(..., validation=None)``); flags are only for what
    a caller may hand some members of a role and not others.

    Attributes
    ----------
    accepts_row_source : bool
        A classifier that consumes lazy row sources (:class:`~assessors.core.rows.PairRows`)
        instead of a materialised matrix.
    """

    accepts_row_source: bool = False


@dataclass(slots=True)
class AssessorsTags(Tags):
    """scikit-learn's :class:`~sklearn.utils.Tags` plus :class:`Capabilities`."""

    capabilities: Capabilities = field(default_factory=Capabilities)


def with_capabilities(tags: Tags, **flags: bool) -> AssessorsTags:
    """``tags`` (any scikit-learn tags) with the given :class:`Capabilities` flags set."""
    base = tags.capabilities if isinstance(tags, AssessorsTags) else Capabilities()
    return AssessorsTags(**{f.name: getattr(tags, f.name) for f in fields(Tags)},
                         capabilities=replace(base, **flags))


def capability(estimator, name: str) -> bool:
    """Whether ``estimator`` declares the capability ``name`` (a :class:`Capabilities` field).

    Objects without scikit-learn tags, or with only scikit-learn's, declare none.
    """
    if name not in Capabilities.__dataclass_fields__:
        raise ValueError(f"unknown capability {name!r}; one of {sorted(Capabilities.__dataclass_fields__)}")
    if not hasattr(estimator, "__sklearn_tags__"):
        return False
    tags = get_tags(estimator)
    return bool(isinstance(tags, AssessorsTags) and getattr(tags.capabilities, name))
