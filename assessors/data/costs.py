"""The price of one LLM request from its token counts: the one cost formula.

Onboarding applies it to the token counts an endpoint reports (the measured per-cell
``Results.cost``); routing's :class:`~assessors.routing.costs.CostModel` applies it to token counts
estimated before the request (the expected cost).
"""
from __future__ import annotations

import numpy as np


def request_cost(input_tokens, output_tokens, per_1k_input: float = 0.0, per_1k_output: float = 0.0,
                 per_item: float = 0.0) -> np.ndarray:
    """``per_item + (input_tokens * per_1k_input + output_tokens * per_1k_output) / 1000``.

    Parameters
    ----------
    input_tokens, output_tokens : float or array of shape (m,)
        Prompt and completion tokens of each request.
    per_1k_input, per_1k_output : float
        Price per 1,000 prompt / completion tokens (any currency unit).
    per_item : float
        Fixed price per request.

    Returns
    -------
    ndarray of shape (m,) (0-d for scalar input), float64
    """
    return float(per_item) + (np.asarray(input_tokens, dtype=np.float64) * float(per_1k_input)
                              + np.asarray(output_tokens, dtype=np.float64) * float(per_1k_output)) / 1000.0
