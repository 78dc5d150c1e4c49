"""Choosing a new task's calibration prompts and known LLMs by information."""
from __future__ import annotations

import numpy as np
import pytest

from assessors.errors import DataError
from assessors.onboarding.task_design import choose_llms, choose_prompts


def test_prompts_spread_over_the_task_and_are_distinct():
    rng = np.random.default_rng(0)
    centre_a, centre_b = np.eye(8)[0] * 5, np.eye(8)[1] * 5
    X = np.vstack([centre_a + rng.standard_normal((180, 8)) * 0.5, centre_b + rng.standard_normal((20, 8)) * 0.5])
    chosen = choose_prompts(X, 10)
    assert len(set(chosen.tolist())) == 10
    assert (chosen >= 180).sum() >= 1  # the small cluster is not left out
    assert (chosen < 180).sum() > (chosen >= 180).sum()  # but the large one gets more
    # random choices leave the small cluster out about (180/200)^10 = 35% of the time
    with pytest.raises(DataError, match="need 0 < k <= 200"):
        choose_prompts(X, 201)


def test_llms_straddle_the_items_difficulty():
    theta = np.linspace(-3, 3, 31)[:, None]
    hard = choose_llms(theta, np.ones((20, 1)), np.full(20, 1.0), 5)
    easy = choose_llms(theta, np.ones((20, 1)), np.full(20, -1.0), 5)
    assert theta[hard].mean() > 0.5 and theta[easy].mean() < -0.5
    assert len(set(hard.tolist())) == 5
    # two parameters per item need LLMs on both sides of its difficulty, not five alike
    assert theta[hard].min() < 1.0 < theta[hard].max()
    with pytest.raises(DataError, match="need 0 < m <= 31"):
        choose_llms(theta, np.ones((20, 1)), np.zeros(20), 32)
