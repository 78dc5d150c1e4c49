"""The trust report: verdicts on constructed LLMs, serialisation, logging and the registry hook."""
import json

import numpy as np
import pytest

from assessors.tracking import RunLogger
from assessors.trust import FallbackPolicy, log_trust_report, make_trust_fn, trust_report


@pytest.fixture(scope="module")
def population():
    """20 training LLMs: a shared latent difficulty, accuracies between 0.3 and 0.7."""
    rng = np.random.default_rng(0)
    difficulty = rng.normal(size=100)
    skill = np.linspace(-0.8, 0.8, 20)[:, None]
    T = (rng.random((20, 100)) < 1 / (1 + np.exp(-3 * (skill - difficulty)))).astype(float)
    return T, [f"m{i}" for i in range(20)], rng


def test_identical_llm_in_population(population):
    T, names, _ = population
    rep = trust_report(T[7], T, names)
    assert rep.nearest[0] == ("m7", pytest.approx(1.0))
    assert not rep.out_of_population and rep.flags == []
    assert "in population" in str(rep)


def test_independent_llm_is_flagged_low_similarity(population):
    T, names, rng = population
    r = (rng.random(100) < 0.5).astype(float)  # same accuracy, unrelated to item difficulty
    rep = trust_report(r, T, names)
    assert abs(rep.similarity) < 0.25
    assert "low_similarity" in rep.flags and rep.out_of_population
    assert rep.range.flag is None


def test_out_of_range_accuracy_is_flagged(population):
    T, names, _ = population
    strong = np.ones(100)
    strong[np.argsort(T.mean(0))[:3]] = 0  # fails only the 3 hardest items
    rep = trust_report(strong, T, names)
    assert "range_above" in rep.flags and rep.out_of_population
    assert "ABOVE the best" in str(rep)
    weak = 1 - strong
    assert "range_below" in trust_report(weak, T, names).flags


def test_all_zero_reference_is_warned_and_serialisable(population):
    T, names, _ = population
    rep = trust_report(np.zeros(100), T, names)
    assert "insufficient_data" in rep.flags
    d = rep.to_dict()
    json.dumps(d, allow_nan=False)  # NaN became null: valid JSON for the HTTP API
    assert any("all-0" in w for w in d["warnings"])
    assert "WARNING: all 100 answered" in str(rep)
    assert "**warning**" in rep.to_markdown()
    run = RunLogger()
    log_trust_report(run, rep, name="trust/new")
    assert run.metrics["trust/new.accuracy"] == 0.0 and "trust/new/report.md" in run.artifacts


def test_registry_hook_and_fallback_on_report(population):
    T, names, _ = population

    class Model:  # what make_trust_fn needs of an AssessorModel
        reference_success, llms, assessor = T.astype(np.float32), names, None

    fn = make_trust_fn(Model())
    out = fn(np.ones(100))
    assert out["flags"][:1] == ["range_above"] and out["out_of_population"] is True
    pol = FallbackPolicy(triggers=["range_above"])
    pol.weight_ = 1.0
    assert pol.weight_for(out["flags"]) == 1.0 and pol.weight_for([]) == 0.0
