"""The neighbour profiles of a latent model adapted to a new task
(:class:`~assessors.task_calibration.calibration.TaskCalibration`).

A task's calibration answers join the neighbour profiles (:mod:`assessors.core.item_profiles`) of the task's
prompts only: every other prompt, the reference set's among them, keeps its training profile. They are part
of the adapted latent model (and its pickle), so they live in core; models pickled when :class:`TaskProfiles`
was named in ``assessors.core.task_calibration`` still load (:data:`assessors.core.saved_model.MOVED_MODULES`).
"""
from __future__ import annotations

import copy

import numpy as np

from assessors.core.task_correction import TaskCorrection
from assessors.features.base import unit_rows


class TaskProfiles:
    """Neighbour profiles of an adapted model: a task prompt's profile also reads the calibrated
    prompts (``augmented``), every other prompt keeps the training profile (``base``), so the reference
    set's item parameters, and with them new LLMs' posteriors from reference answers, do not move."""

    def __init__(self, base, augmented, correction: TaskCorrection):
        self.base, self.augmented, self.correction = base, augmented, correction

    @property
    def features_(self):
        return self.base.features_

    def inputs(self, X: np.ndarray) -> np.ndarray:
        """The item network's input (m, d + n_dims): see :meth:`NeighbourProfiles.inputs`."""
        out = self.base.inputs(X)
        inside = self.correction.membership(X) if len(X) else np.zeros(0, bool)
        if inside.any():
            out[inside] = self.augmented.inputs(np.asarray(X, dtype=np.float32)[inside])
        return out


def with_calibration(profiles, X, Y, rows):
    """A copy of ``profiles`` whose training prompts also hold the calibrated prompts ``X`` (n, d) with
    the known LLMs' answers ``Y`` (k, n) in their columns ``rows`` (the other LLMs: not evaluated)."""
    out = copy.copy(profiles)
    extra = np.full((len(X), profiles.answers_.shape[1]), 255, np.uint8)
    for i, r in enumerate(rows):
        seen = np.isfinite(Y[i])
        extra[seen, r] = Y[i, seen].astype(np.uint8)
    out.features_ = np.vstack([profiles.features_, unit_rows(X).astype(np.float16)])
    out.answers_ = np.vstack([profiles.answers_, extra])
    out._memo = None  # profiles computed against the old prompts are stale
    return out
