"""Onboarding then scoring, end to end with real parts: onboard SmolLM2-135M-Instruct (llama-cpp-python server
on loopback) on a tiny real assessor's reference prompts, then score prompts for it.

Slow (fits a small XGBoost assessor and starts a server; ~1-2 min on 2 cores):
``python -m pytest tests/onboarding/test_onboard_then_score.py -m slow -q``.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
# tests/serving is not a package: import its tiny-assessor helper by path
sys.path.insert(0, str(ROOT / "tests" / "serving"))

MAX_TOKENS = 8
N_SCORE = 12
LLM = "smollm2"


@pytest.mark.slow
def test_onboard_smollm2_then_score(llama_base_url, llama_model, data_dir, tmp_path):
    from hydra import compose, initialize_config_dir
    from hydra.utils import instantiate

    from assessors.routing.setup import build_engine, trust_hook
    from tiny_assessor import fit_tiny

    tiny = fit_tiny(data_dir)
    model, res = tiny["model"], tiny["results"]
    ref_ids = list(model.reference_ids)

    # 1) onboard on the assessor's own reference prompts (prompt/target/subgroup from the data)
    prompts = res.instances.loc[ref_ids, ["prompt", "target", "subgroup"]].rename_axis("instance_id").reset_index()
    overrides = [f"base_url={llama_base_url}", f"model={llama_model}", f"max_tokens={MAX_TOKENS}",
                 "concurrency=1", f"llm_name={LLM}", "show_progress=false"]
    with initialize_config_dir(str(ROOT / "conf"), version_base=None):
        cfg = compose(config_name="onboarding/default", overrides=[f"onboarding.{o}" for o in overrides])
    onboarded, summary = instantiate(cfg.onboarding).run(prompts, tmp_path / "onboard")
    assert onboarded.llms == [LLM] and sorted(onboarded.instance_ids) == sorted(ref_ids)
    assert summary["n_answered"] == len(ref_ids), summary

    # 2) the new LLM's reference vector, in the model's reference-id order
    vec = onboarded.matrix([LLM], ref_ids)[0]
    assert vec.shape == (len(ref_ids),) and set(np.unique(vec)) <= {0.0, 1.0}
    ref_acc = float(vec.mean())
    assert ref_acc == pytest.approx(summary["accuracy"])

    # 3a) score held-out prompts directly with the generic assessor
    test_prompts = res.prompts(tiny["test_ids"][:N_SCORE])
    p_direct = np.atleast_2d(model.assessor.predict_proba(model.featurizer.transform(test_prompts), vec[None, :]))
    assert p_direct.shape == (1, N_SCORE)

    # 3b) and through the predict path: engine + registry with the built-in trust report; its fallback off, so
    # that what is served is the model's own prediction (the served fallback is tested in tests/trust)
    engine = build_engine(None, model=model, trust={"enabled": True, "fallback": False})
    assert engine.registry.trust_fn is not None and trust_hook(model, {"enabled": True}) is not None
    entry = engine.registry.register(LLM, vec, source=str(tmp_path / "onboard"))
    names, P = engine.predict(test_prompts)
    assert names == [LLM] and P.shape == (1, N_SCORE)
    assert np.isfinite(P).all() and ((P > 0) & (P < 1)).all(), P
    np.testing.assert_allclose(P, p_direct, rtol=1e-5, atol=1e-6)

    # the registration reports SmolLM2's reference accuracy and a trust report against the
    # 20 training LLMs (which flags, if any, is the report's judgement, not asserted here)
    assert entry.n_answered == len(ref_ids) and entry.reference_accuracy == pytest.approx(ref_acc)
    trust = entry.trust
    assert isinstance(trust, dict) and "verdict" in trust and "flags" in trust, trust
    assert trust["n_answered"] == int(np.isfinite(vec).sum()) and 0 <= trust["expected_accuracy"] <= 1

    # context for the figures: the same prompts scored for the training LLMs
    P_known = model.assessor.predict_proba(engine.embed(test_prompts), np.asarray(model.reference_success))
    print(f"\nSmolLM2 onboarding: reference accuracy {ref_acc:.3f} on {len(ref_ids)} items "
          f"({summary.get('seconds', float('nan')):.1f} s); mean predicted P(success) on {N_SCORE} test prompts "
          f"{float(P.mean()):.3f}; trust verdict {trust['verdict']}, flags {trust['flags']}, "
          f"range {trust.get('accuracy_range_training')}; training LLMs' mean P {float(np.min(P_known.mean(1))):.3f}-"
          f"{float(np.max(P_known.mean(1))):.3f}")
