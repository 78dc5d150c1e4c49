"""Cheapest LLM whose P(success) reaches a threshold."""
from __future__ import annotations

import numpy as np

from assessors.errors import ConfigError
from assessors.routing.base import Router


class ThresholdRouter(Router):
    """Send each prompt to the cheapest LLM with P(success) >= ``threshold``.

    When no LLM reaches the threshold the most likely LLM is chosen (see
    :class:`~assessors.routing.abstain.AbstainRouter` to reject the prompt instead).

    Parameters
    ----------
    threshold : float in [0, 1]
    """

    knob = "threshold"

    def __init__(self, threshold: float = 0.7):
        self.threshold = threshold

    def check_params(self) -> None:
        if not 0.0 <= float(self.threshold) <= 1.0:
            raise ConfigError(f"threshold must be in [0, 1], got {self.threshold!r}")

    def score(self, P: np.ndarray, C: np.ndarray) -> np.ndarray:
        return np.where(P >= self.knob_value, -C, -np.inf)

    def knob_grid(self, P: np.ndarray, C: np.ndarray) -> np.ndarray:
        return np.linspace(0.0, 1.0, 201)
