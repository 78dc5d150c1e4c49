"""One trust report for every assessor family: the paper's generic assessor (no spread) and the latent one
get a verdict and a served predictor through the same hook, on real BBH answers."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "serving"))

from tiny_assessor import LATENT, fit_tiny  # noqa: E402

from assessors.core.evidence import Evidence  # noqa: E402
from assessors.trust import make_trust_fn  # noqa: E402


@pytest.fixture(scope="module", params=["generic", "latent"])
def tiny(request, data_dir):
    if request.param == "generic":
        return fit_tiny(data_dir)
    from assessors.core.latent import LatentAssessor

    return fit_tiny(data_dir, assessor=LatentAssessor(**LATENT))


def test_every_family_gets_a_verdict_and_a_served_predictor(tiny):
    model = tiny["model"]
    fn = make_trust_fn(model, n_samples=100)
    name = model.assessor.family_name
    held_out = tiny["results"].matrix(tiny["test_llms"][:2], tiny["reference_ids"])
    for r in held_out:
        rep, predictor = fn(r)
        assert rep["n_answered"] == int(np.isfinite(r).sum()) and rep["verdict"] in ("ok", "uncertain", "out of population")
        lo, hi = rep["accuracy_band"]
        assert 0 <= lo <= rep["expected_accuracy"] <= hi <= 1 and rep["auc_band"][0] <= rep["auc_band"][1]
        assert rep["fallback"]["predictor"] == (name if predictor is None else predictor.name)
    # an LLM that failed every reference item: out of population (the generic model's level barely moves with
    # the reference vector, but the answers are unlike any training LLM's), served a fallback at its own level
    rep, predictor = fn(np.zeros(len(tiny["reference_ids"])))
    assert rep["verdict"] == "out of population" and {"accuracy_below_training", "low_similarity"} & set(rep["flags"])
    assert predictor is not None and rep["fallback"]["applied"]
    X = np.asarray(model.assessor.reference_features_)
    assert predictor(X).mean() < 0.5 * model.assessor.predict_proba(X, np.asarray(model.reference_success)).mean()


def test_answers_against_the_models_ranking_misfit(tiny):
    """Simulation: answers drawn from the model's own predictions fit it; the same answers reversed on the
    prompts it ranks (pass the hardest, fail the easiest) misfit."""
    model = tiny["model"]
    a = model.assessor
    X = np.asarray(a.reference_features_, dtype=np.float32)
    r = np.asarray(model.reference_success[0], dtype=np.float64)  # a training LLM's own results
    p, _ = a.predict_state(X, a.describe_answered(Evidence(X, r)))
    fn = make_trust_fn(model, n_samples=200, misfit_alpha=0.05)
    rng = np.random.default_rng(0)
    fits = [fn((rng.random(len(p)) < p).astype(float))[0]["misfit_pvalue"] for _ in range(5)]
    assert np.median(fits) > 0.2, fits
    reverse = np.zeros(len(p))
    reverse[np.argsort(p)[: int(round(p.sum()))]] = 1.0  # the same number of successes, on the least likely prompts
    rep = fn(reverse)[0]
    assert rep["misfit_pvalue"] < 0.05 and "misfit" in rep["flags"], rep
