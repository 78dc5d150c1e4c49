"""The trust evaluation scores what the serving path serves: :func:`served_outcomes` (the serving policy's
``serve``) gives each LLM the verdict its report re-judged under the same thresholds gives, and the served
predictions score as the outcome's model or fallback (simulated LLMs)."""
from __future__ import annotations

import numpy as np
import pytest

from assessors.trust.posterior_eval import llm_outcomes, served_outcomes
from assessors.trust.posterior_policy import PosteriorTrustPolicy
from assessors.trust.posterior_report import OUT, judge
from tests.latent_sim import fit_simulated


@pytest.mark.parametrize("thresholds", [{}, {"misfit_alpha": 0.5, "max_width": 0.3}])
def test_served_outcomes_are_the_outcomes_of_the_served_predictor(thresholds):
    model, d = fit_simulated()
    llms, ref = d["new"][:6], d["pool"][::10]
    S = d["S"].astype(np.float64)
    given = (d["X"][ref], S[np.ix_(llms, ref)], d["X"][d["target"]], S[np.ix_(llms, d["target"])],
             [str(k) for k in llms])
    reps, outs = llm_outcomes(model, *given, seed=3)
    served = served_outcomes(PosteriorTrustPolicy(fallback_kind="releveled", seed=3, **thresholds), model, *given)
    for rep, out, srv in zip(reps, outs, served):
        judged = judge(rep, **thresholds)
        assert srv["verdict"] == judged.verdict and srv["flags"] == judged.flags
        kind = "releveled" if judged.verdict == OUT else "latent"
        assert srv["fallback"]["applied"] == (kind != "latent")
        assert srv["auc_served"] == pytest.approx(out[f"auc_{kind}"]) and srv["brier_served"] == pytest.approx(out[f"brier_{kind}"])
    if thresholds:  # a misfit threshold this loose sends some LLMs to the fallback
        assert any(s["fallback"]["applied"] for s in served)
