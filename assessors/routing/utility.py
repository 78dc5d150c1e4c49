"""Best P(success) minus lambda times cost."""
from __future__ import annotations

import numpy as np

from assessors.errors import ConfigError
from assessors.routing.base import Router


class UtilityRouter(Router):
    """Send each prompt to the LLM maximising ``P(success) - lam * cost``.

    ``lam`` is the price of one unit of cost in units of success probability: with costs in
    USD, ``lam = 100`` trades 1 cent for one percentage point of P(success).

    Parameters
    ----------
    lam : float >= 0
    """

    knob = "lam"

    def __init__(self, lam: float = 0.0):
        self.lam = lam

    def check_params(self) -> None:
        if not float(self.lam) >= 0.0:
            raise ConfigError(f"lam must be >= 0, got {self.lam!r}")

    def score(self, P: np.ndarray, C: np.ndarray) -> np.ndarray:
        return P - self.knob_value * C

    def knob_grid(self, P: np.ndarray, C: np.ndarray) -> np.ndarray:
        # From "cost is irrelevant" (0) to "cost dominates": the largest useful lam makes
        # the smallest cost gap between LLMs outweigh a full unit of probability.
        c = np.asarray(C, dtype=float)
        spread = np.ptp(c, axis=0)
        pos = spread[spread > 0]
        if pos.size == 0:
            return np.array([0.0])
        lo, hi = 1e-3 / float(np.max(pos)), 10.0 / float(np.min(pos))
        return np.concatenate([[0.0], np.geomspace(lo, hi, 200)])
