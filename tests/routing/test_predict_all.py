"""How the routing evaluation describes LLMs to an assessor with a posterior, on LLMs simulated from the
latent model: the seen LLMs by all their answers, a held-out LLM by its reference answers as served."""
from __future__ import annotations

import numpy as np
import pytest

from assessors.core.latent import LatentAssessor
from assessors.irt_math import sigmoid
from assessors.routing.evaluate import predict_all
from assessors.routing.knn import KNNSuccess
from assessors.routing.mf import MFSuccess
from tests.latent_sim import FAST


@pytest.fixture(scope="module")
def world():
    """12 LLMs (the last far stronger than the rest) on 800 prompts: 500 fit, 100 val, 200 test."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((800, 6)).astype(np.float32)
    a = np.log1p(np.exp(X @ rng.standard_normal(6) / 2)) + 0.5
    b = 1.5 * X @ rng.standard_normal(6) / np.sqrt(6)
    theta = np.r_[rng.normal(0.0, 0.8, 11), 4.0]
    P = sigmoid(np.outer(theta, a) - b)
    S = (rng.random(P.shape) < P).astype(np.float32)
    parts = {"fit": np.arange(500), "val": np.arange(500, 600), "test": np.arange(600, 800)}
    return {"X": {k: X[v] for k, v in parts.items()}, "S": {k: S[:, v] for k, v in parts.items()},
            "P_test": P[:, parts["test"]], "ref": np.arange(0, 500, 25)}  # 20 reference prompts


def _run(world, holdout, seen_llms):
    S = world["S"]
    return predict_all(LatentAssessor(**FAST), KNNSuccess(k=10), MFSuccess(dim=4, epochs=30), world["X"], S["fit"],
                       S["val"], world["ref"], holdout, seen_llms=seen_llms)["generic assessor"]["test"]


def test_seen_llms_described_by_all_their_answers_get_their_level_right(world):
    truth = world["P_test"][:11].mean(1)
    err = {how: np.abs(_run(world, 11, how)[:11].mean(1) - truth).mean() for how in ("all_answers", "reference")}
    # 500 answers pin each seen LLM's level down; 20 reference answers leave it about 0.1 off
    assert err["all_answers"] < 0.5 * err["reference"], err
    assert err["all_answers"] < 0.04, err


def test_a_held_out_llm_beyond_the_training_range_is_served_by_its_fallback(world):
    served, plain = _run(world, 11, "all_answers")[11], _run(world, 11, "reference")[11]
    truth = world["P_test"][11].mean()
    # the latent posterior alone shrinks an LLM stronger than every training LLM towards them; its
    # trust verdict switches it to the re-levelled fallback, whose level comes from its own answers
    assert plain.mean() < truth - 0.04, (plain.mean(), truth)
    assert abs(served.mean() - truth) < abs(plain.mean() - truth), (served.mean(), plain.mean(), truth)


def test_seen_llms_must_be_a_known_protocol(world):
    with pytest.raises(ValueError, match="seen_llms"):
        _run(world, None, "everything")
