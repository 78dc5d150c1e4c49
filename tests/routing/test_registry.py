"""Registry and cost model: reference parsing, runtime registration, trust hook, costs."""
from __future__ import annotations

import numpy as np
import pytest

from assessors.errors import ConfigError, DataError
from assessors.data.costs import request_cost
from assessors.routing.costs import CostModel
from assessors.routing.registry import DuplicateLLMError, LLMRegistry, UnknownLLMError, reference_vector

IDS = ["a", "b", "c", "d"]


def test_reference_vector_from_mapping_and_list():
    np.testing.assert_array_equal(reference_vector({"b": 1, "a": 0}, IDS), [0, 1, np.nan, np.nan])
    np.testing.assert_array_equal(reference_vector([1, -1, None, 0], IDS), [1, np.nan, np.nan, 0])
    with pytest.raises(DataError, match="not reference ids"):
        reference_vector({"zz": 1}, IDS)
    with pytest.raises(DataError, match="in \\[0, 1\\]"):
        reference_vector([0, 2, 1, 1], IDS)
    with pytest.raises(DataError, match="at least 2"):
        reference_vector({"a": 1}, IDS, min_answered=2)


def test_register_get_remove_and_trust_hook():
    seen = []
    reg = LLMRegistry(IDS, trust_fn=lambda r: seen.append(r) or {"accuracy": float(np.nanmean(r))})
    e = reg.register("m1", {"a": 1, "b": 0, "c": 1}, cost={"per_item": 0.5})
    assert e.trust == {"accuracy": pytest.approx(2 / 3)} and len(seen) == 1
    assert e.summary()["n_answered"] == 3 and reg.names() == ["m1"]
    with pytest.raises(DuplicateLLMError):
        reg.register("m1", [1, 1, 1, 1])
    reg.register("m1", [1, 1, 1, 1], overwrite=True)
    assert reg.get("m1").reference_accuracy == 1.0
    with pytest.raises(UnknownLLMError, match="unknown LLM 'x'"):
        reg.resolve(["x"])
    reg.remove("m1")
    assert len(reg) == 0


def test_a_new_trust_hook_re_reports_every_registered_llm():
    reg = LLMRegistry(IDS, trust_fn=lambda r: {"llm": "new", "on": "reference"})
    reg.register("m1", {"a": 1, "b": 0}, cost={"per_item": 0.5}, meta={"k": 1})
    reg.register("m2", [0, 1, 1, 1])
    fallback = lambda X: np.zeros(len(X))  # noqa: E731 - the predictor a verdict may ask for
    assert reg.set_trust_fn(lambda r: ({"llm": "new", "on": "pool", "n": int(np.isfinite(r).sum())}, fallback)) == 2
    m1, m2 = reg.get("m1"), reg.get("m2")
    assert m1.trust == {"llm": "m1", "on": "pool", "n": 2} and m2.trust == {"llm": "m2", "on": "pool", "n": 4}
    assert m1.predictor is fallback and m1.meta == {"k": 1} and m1.cost.as_dict() == CostModel(per_item=0.5).as_dict()
    assert reg.names() == ["m1", "m2"] and reg.register("m3", [1, 1, 0, 0]).trust["on"] == "pool"


def test_cost_model():
    c = CostModel(per_item=0.001, per_1k_input=0.5, per_1k_output=1.5, output_tokens=100)
    # 400 chars = 100 input tokens
    np.testing.assert_allclose(c.expected(["x" * 400, ""]), [0.001 + (100 * 0.5 + 100 * 1.5) / 1000, 0.001 + 0.15])
    # reported token counts (onboarding) go through the same formula
    np.testing.assert_allclose(request_cost([100, 0], [100, 300], 0.5, 1.5, 0.001), [0.001 + 0.2, 0.001 + 0.45])
    bad = CostModel(per_item=-1)  # scikit-learn contract: validated on use, not in __init__
    with pytest.raises(ConfigError, match="per_item"):
        bad.expected(["x"])
    reg = LLMRegistry(IDS)
    with pytest.raises(ConfigError, match="per_item"):  # registration still rejects it up front
        reg.register("bad", [1, 0, 1, 0], cost={"per_item": -1})
    reg.register("a", [1, 0, 1, 0], cost=c)
    reg.register("b", [1, 0, 1, 0])
    M = reg.cost_matrix(reg.resolve(None), ["x" * 400])
    assert M.shape == (2, 1) and M[1, 0] == 0


def test_serving_cost_body_is_the_cost_models_parameters():
    from assessors.serving.schemas import CostSpec

    assert CostSpec().model_dump() == CostModel().get_params()
    assert CostModel(**CostSpec(per_1k_input=0.5).model_dump()).get_params()["per_1k_input"] == 0.5
