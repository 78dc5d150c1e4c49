"""Expected cost of sending a prompt to an LLM: per item, or per 1k input/output tokens."""
from __future__ import annotations

from typing import Sequence

import numpy as np
from sklearn.base import BaseEstimator

from assessors.data.costs import request_cost
from assessors.errors import ConfigError


class CostModel(BaseEstimator):
    """Expected cost (any currency unit, e.g. USD) of one request.

    ``cost = per_item + (input_tokens * per_1k_input + output_tokens * per_1k_output) / 1000``

    Input tokens are estimated from the prompt length (``len(prompt) / chars_per_token``):
    routing happens before the request, so no tokenizer of the target LLM is at hand, and
    the ~4 characters per token of English BPE vocabularies is accurate enough to rank LLMs
    whose prices differ by 10-100x. Output tokens are a configured expectation.

    Parameters
    ----------
    per_item : float
        Fixed cost per request.
    per_1k_input, per_1k_output : float
        Price per 1,000 prompt / completion tokens.
    output_tokens : float
        Expected completion length in tokens.
    chars_per_token : float
        Characters per prompt token for the input estimate.
    """

    def __init__(self, per_item: float = 0.0, per_1k_input: float = 0.0, per_1k_output: float = 0.0,
                 output_tokens: float = 0.0, chars_per_token: float = 4.0):
        self.per_item = per_item
        self.per_1k_input = per_1k_input
        self.per_1k_output = per_1k_output
        self.output_tokens = output_tokens
        self.chars_per_token = chars_per_token

    def check(self) -> "CostModel":
        """Raise :class:`ConfigError` unless every price is a finite number >= 0; returns ``self``.

        Called on first use and by :meth:`LLMRegistry.register`, so a bad price fails when
        the LLM is registered, not when a prompt is first routed to it.
        """
        for k, v in self.get_params().items():
            if v is None or not np.isfinite(float(v)) or float(v) < 0:
                raise ConfigError(f"CostModel.{k} must be a finite number >= 0, got {v!r}")
        if float(self.chars_per_token) <= 0:
            raise ConfigError(f"CostModel.chars_per_token must be > 0, got {self.chars_per_token!r}")
        return self

    def expected(self, prompts: Sequence[str]) -> np.ndarray:
        """Expected cost of each prompt, shape (m,), float64."""
        self.check()
        n_chars = np.fromiter((len(p) for p in prompts), dtype=np.float64, count=len(prompts))
        return request_cost(n_chars / float(self.chars_per_token), float(self.output_tokens), self.per_1k_input,
                            self.per_1k_output, self.per_item)

    def as_dict(self) -> dict[str, float]:
        self.check()
        return {k: float(v) for k, v in self.get_params().items()}
