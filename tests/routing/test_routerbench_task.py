"""The RouterBench routing evaluation (``experiment=routerbench``) run end to end with the latent assessor
on one of its data sets: every router and baseline is scored in every setting, the held-out LLMs included."""
from __future__ import annotations

import json
import math

import pytest


@pytest.mark.slow
def test_the_routerbench_evaluation_runs_with_the_latent_assessor(compose, tmp_path):
    from assessors.tasks.entry import run_task

    cfg = compose(["experiment=routerbench", "assessor=latent", "data.datasets=[mbpp]", "features=unigram",
                   "features.max_features=200", "selector.size=30", "assessor.n_members=1",
                   "assessor.hidden_sizes=[16]", "assessor.max_epochs=5", "assessor.residual_dims=8",
                   "baselines.mf.epochs=20", "tracking=none"])
    aiq = run_task(cfg)  # the optimised metric: the configured (latent) assessor's AIQ in distribution
    assert aiq is not None and 0.0 < aiq <= 1.0
    summary = json.loads((tmp_path / "outputs" / "routerbench" / "summary.json").read_text())
    settings = {r["setting"] for r in summary["table"]}
    assert settings == {"in-distribution", "onboarding:zero-one-ai/Yi-34B-Chat", "onboarding:gpt-4-1106-preview"}
    for setting in settings:
        methods = {r["method"] for r in summary["table"] if r["setting"] == setting}
        assert {"generic assessor", "kNN", "matrix factorisation"} <= methods, (setting, methods)
    assert summary["in-distribution/generic_assessor/aiq"] == pytest.approx(aiq)
    assert all(math.isfinite(r["aiq"]) for r in summary["table"])
    assert summary["n_reference"] == 30
