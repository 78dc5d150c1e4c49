"""Thresholds, band widening and fallback chosen on validation LLMs (synthetic reports): the band
is widened to the coverage aimed at, the thresholds come from the validation failures or are the
stated defaults, the fallback with the lower validation loss is chosen."""
from __future__ import annotations

import numpy as np
import pytest

from assessors.errors import ConfigError, DataError
from assessors.trust.fallbacks import SLOPE_SDS
from assessors.trust.posterior_report import OK, OUT, PosteriorTrust, judge
from assessors.trust.validated_policy import ValidatedTrustPolicy


def _rep(acc=0.5, half=0.05, ppp=0.5, rng=(0.2, 0.8), auc=0.7):
    return judge(PosteriorTrust(llm="x", n_answered=100, expected_accuracy=acc, accuracy_band=(acc - half, acc + half),
                                expected_auc=auc, auc_band=(auc - 0.05, auc + 0.05), misfit_pvalue=ppp,
                                accuracy_range_training=rng, mahalanobis=1.0, mahalanobis_max_training=3.0))


def _losses(k, latent=0.2, releveled=0.2, reference_only=0.25, recalibrated=(0.3, 0.3, 0.3, 0.3)):
    return {"latent": np.full(k, latent), "releveled": np.full(k, releveled), "reference_only": np.full(k, reference_only),
            **{f"recalibrated@{sd:g}": np.full(k, v) for sd, v in zip(SLOPE_SDS, recalibrated)}}


def test_band_is_widened_until_it_covers():
    rng = np.random.default_rng(0)
    reps = [_rep(half=0.05) for _ in range(20)]
    realised = 0.5 + rng.uniform(-0.09, 0.09, 20)  # the posterior band is about half as wide as needed
    pol = ValidatedTrustPolicy().fit(reps, realised, np.full(20, 0.7), np.full(20, 0.6), _losses(20))
    assert pol.band_scale_ == 2.0
    assert pol.coverage_["accuracy"] >= 0.9
    assert pol.auc_band_scale_ == 1.0
    assert judge(reps[0], band_scale=pol.band_scale_).accuracy_band == pytest.approx((0.4, 0.6))


def test_too_few_failures_keep_the_stated_default():
    reps = [_rep() for _ in range(10)]
    pol = ValidatedTrustPolicy().fit(reps, np.full(10, 0.5), np.full(10, 0.7), np.full(10, 0.6), _losses(10))
    assert pol.thresholds_ == {"misfit_alpha": 0.01, "range_margin": 0.02, "max_width": 0.15}
    assert pol.chosen_by_["thresholds"].startswith("default (0 failures")
    assert pol.options()["fallback_kind"] == "recalibrated" and pol.chosen_by_["fallback"].startswith("default")


def test_thresholds_catch_the_validation_failures():
    # 4 LLMs whose answers misfit mildly (p = 0.03) and whose ranking failed; 6 fine ones
    reps = [_rep(ppp=0.03) for _ in range(4)] + [_rep(ppp=0.5) for _ in range(6)]
    a_lat = np.r_[np.full(4, 0.5), np.full(6, 0.7)]
    pol = ValidatedTrustPolicy().fit(reps, np.full(10, 0.5), a_lat, np.full(10, 0.6), _losses(10))
    assert pol.thresholds_["misfit_alpha"] == 0.05
    assert [judge(r, **pol.thresholds_).verdict for r in reps] == [OUT] * 4 + [OK] * 6


def test_the_fallback_with_the_lower_validation_loss_is_chosen():
    reps = [_rep(ppp=0.001) for _ in range(3)] + [_rep() for _ in range(7)]
    k = 10
    pol = ValidatedTrustPolicy().fit(reps, np.full(k, 0.5), np.full(k, 0.7), np.full(k, 0.6),
                                     _losses(k, latent=0.3, releveled=0.25, reference_only=0.1))
    assert pol.n_triggered_ == 3
    assert pol.options()["fallback_kind"] == "reference_only"
    pol = ValidatedTrustPolicy().fit(reps, np.full(k, 0.5), np.full(k, 0.7), np.full(k, 0.6),
                                     _losses(k, latent=0.3, releveled=0.2, reference_only=0.25))
    assert pol.options()["fallback_kind"] == "releveled"


def test_a_flag_raised_only_on_llms_that_did_well_is_muted():
    # 3 validation LLMs above the training range, none of them failed: the flag is muted (a note)
    reps = [_rep(acc=0.9, rng=(0.2, 0.8)) for _ in range(3)] + [_rep() for _ in range(7)]
    realised = np.r_[np.full(3, 0.9), np.full(7, 0.5)]
    pol = ValidatedTrustPolicy().fit(reps, realised, np.full(10, 0.7), np.full(10, 0.6), _losses(10))
    assert pol.options()["muted_flags"] == ["accuracy_above_training"]
    j = judge(reps[0], **{k: v for k, v in pol.options().items() if not k.startswith("fallback")})
    assert (j.verdict, j.flags, j.notes) == (OK, [], ["accuracy_above_training"])
    assert "muted_flags" in pol.chosen_by_
    # the same flag on a validation LLM whose ranking failed keeps it
    a_lat = np.r_[0.5, np.full(9, 0.7)]
    pol = ValidatedTrustPolicy().fit(reps, realised, a_lat, np.full(10, 0.6), _losses(10))
    assert pol.options()["muted_flags"] == []
    assert ValidatedTrustPolicy(quiet_flags=False).fit(reps, realised, np.full(10, 0.7), np.full(10, 0.6),
                                                       _losses(10)).options()["muted_flags"] == []


def test_max_width_is_raised_while_uncertain_verdicts_catch_no_failure():
    # bands 0.18 wide: 'uncertain' at the stated 0.15 on every validation LLM, none failed
    reps = [_rep(half=0.09) for _ in range(10)]
    pol = ValidatedTrustPolicy().fit(reps, np.full(10, 0.5), np.full(10, 0.7), np.full(10, 0.6), _losses(10))
    assert pol.thresholds_["max_width"] == 0.2 and "max_width" in pol.chosen_by_
    # one of them failed (ranking below reference only): keep the stated width
    a_lat = np.r_[0.5, np.full(9, 0.7)]
    pol = ValidatedTrustPolicy().fit(reps, np.full(10, 0.5), a_lat, np.full(10, 0.6), _losses(10))
    assert pol.thresholds_["max_width"] == 0.15


def test_mismatched_inputs_are_a_clear_error():
    with pytest.raises(DataError, match="needs 'latent'"):
        ValidatedTrustPolicy().fit([_rep()], [0.5], [0.7], [0.6], {"releveled": np.ones(1)})


def test_serving_defaults_are_the_stated_defaults_of_the_validated_policy():
    """predict.py and the server (no validation LLMs at hand) use what the validated policy falls back to."""
    import inspect
    from pathlib import Path

    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    from assessors.trust.posterior_policy import PosteriorTrustPolicy
    from assessors.trust.posterior_report import judge
    from assessors.trust.validated_policy import FLAG_SETS

    pol = instantiate(OmegaConf.load(Path(__file__).resolve().parents[2] / "conf" / "trust" / "validated_policy.yaml"))
    d = pol._defaults()
    sig = inspect.signature(judge).parameters
    for k in ("misfit_alpha", "range_margin", "max_width"):
        assert sig[k].default == d[k], k
    serving = PosteriorTrustPolicy()
    assert serving.fallback_kind == d["fallback_kind"]
    assert serving.fallback_flags == FLAG_SETS[d["fallback_flags"]]
    assert serving.fallback_slope_sd == d["fallback_slope_sd"] == pol.slope_sds[0]


def test_stated_defaults_take_the_serving_policys_names():
    """One name per option: ``stated_defaults`` under another name (``fallback``, ``slope_sd``) is one error naming them."""
    pol = ValidatedTrustPolicy(stated_defaults={"fallback_kind": "releveled", "fallback_slope_sd": 0.3})
    assert (pol._defaults()["fallback_kind"], pol._defaults()["fallback_slope_sd"]) == ("releveled", 0.3)
    with pytest.raises(ConfigError, match=r"unknown stated_defaults \['fallback', 'slope_sd'\]; allowed: .*fallback_kind"):
        ValidatedTrustPolicy(stated_defaults={"fallback": "releveled", "slope_sd": 0.3})._defaults()


def test_a_stored_record_of_an_earlier_version_still_builds_its_policy():
    """A model stored before the validated policy's options took the serving names: its record (``chosen_by`` keyed
    by step, ``fallback`` / ``slope_sd``) builds the serving policy it chose."""
    from types import SimpleNamespace

    from assessors.trust.posterior_policy import PosteriorTrustPolicy, policy_options

    stored = {"source": "validated on 10 validation LLMs", "n_validation_llms": 10,
              "options": {"misfit_alpha": 0.05, "range_margin": 0.05, "max_width": 0.2, "band_scale": 1.5,
                          "auc_band_scale": 2.0, "muted_flags": ["low_similarity"], "fallback_kind": "releveled",
                          "fallback_flags": ["misfit"], "fallback_slope_sd": 0.3},
              "chosen_by": {"fallback": "lowest mean loss over 10 validation LLMs (3 triggered)",
                            "slope_sd": "lowest mean loss over 10 validation LLMs"}}
    pol = PosteriorTrustPolicy(**policy_options(SimpleNamespace(trust_policy=stored, prompt_ood=None)))
    got = pol.settings()
    assert got["source"] == stored["source"]
    assert {k: got[k] for k in stored["options"]} == stored["options"]


@pytest.mark.parametrize(("recalibrated", "k", "chosen", "why"), [
    ((0.20, 0.18, 0.15, 0.16), 10, 1.0, "lowest mean loss"),        # the population bears out the model's spread
    ((0.20, 0.198, 0.197, 0.199), 10, 0.1, "default"),              # gains below min_loss_gain: the cautious default
    ((0.20, 0.18, 0.15, 0.16), 1, 0.1, "on 1 validation LLMs"),     # one validation LLM cannot decide
])
def test_slope_prior_is_chosen_on_every_validation_llm(recalibrated, k, chosen, why):
    pol = ValidatedTrustPolicy(fallbacks=("releveled", "recalibrated")).fit(
        [_rep() for _ in range(k)], np.full(k, 0.5), np.full(k, 0.7), np.full(k, 0.6), _losses(k, recalibrated=recalibrated))
    assert pol.fallback_slope_sd_ == chosen and pol.options()["fallback_slope_sd"] == chosen and why in pol.chosen_by_["slope_sd"]
    assert pol.slope_losses_["recalibrated@1"] == pytest.approx(recalibrated[2])


def test_slope_priors_without_losses_name_the_fix():
    losses = {k: v for k, v in _losses(3).items() if k != "recalibrated@3"}
    with pytest.raises(DataError, match=r"recalibrated@3.*slope_sds"):
        ValidatedTrustPolicy().fit([_rep()] * 3, np.full(3, 0.5), np.full(3, 0.7), np.full(3, 0.6), losses)


def test_verdict_scores_count_failures_flags_and_the_fallbacks_auc():
    from assessors.tasks.trust_eval import verdict_scores

    reps = [_rep(ppp=0.001), _rep(ppp=0.001), _rep(), _rep()]
    outs = [{"llm": str(i), "realised_accuracy": acc, "auc_latent": al, "auc_reference_only": ar, "auc_releveled": al,
             "brier_latent": 0.2, "brier_releveled": 0.2, "brier_reference_only": 0.2}
            for i, (acc, al, ar) in enumerate([(0.5, 0.6, 0.7), (0.5, 0.7, 0.6), (0.9, 0.7, 0.6), (0.5, 0.7, 0.6)])]
    # what the serving path gives: the releveled fallback on out-of-population LLMs (the same ranking, its AUC)
    served = [{**r.to_dict(), "auc_served": o["auc_latent"], "brier_served": 0.2,
               "fallback": {"applied": r.verdict == OUT, "predictor": "releveled" if r.verdict == OUT else "latent",
                            "auc_band": list(r.auc_band), "auc_band_from": "posterior", "accuracy_band": None,
                            "accuracy_band_from": None}} for r, o in zip(reps, outs)]
    out = verdict_scores(served, outs)
    # failures: LLM 0 (ranking), LLM 2 (accuracy outside the band); flagged: LLMs 0 and 1
    assert (out["n_failures"], out["n_flagged"], out["n_flagged_failures"], out["n_fallback"]) == (2, 2, 1, 2)
    assert out["recall"] == 0.5 and out["false_alarm_rate"] == 0.5
    assert out["fallback_llms_auc"] == pytest.approx({"with_fallback": 0.65, "reference_only": 0.65, "latent": 0.65})
    assert out["other_llms_auc"] == pytest.approx({"with_fallback": 0.7, "latent": 0.7})
    assert out["served_auc_band_coverage"] == 0.75 and out["served_accuracy_band_coverage"] is None  # LLM 0: 0.6 below


def test_out_of_population_lowers_the_auc_band_to_chance():
    from dataclasses import replace

    rep = replace(_rep(), auc_chance_low=0.45)
    assert judge(rep).verdict == OK and judge(rep).auc_band == pytest.approx((0.65, 0.75))
    out = judge(rep, misfit_alpha=0.9)  # every p-value below: misfit, out of population
    assert out.verdict == OUT and out.auc_band == pytest.approx((0.45, 0.75))
    muted = judge(rep, misfit_alpha=0.9, muted_flags=["misfit"])
    assert muted.verdict == OK and muted.auc_band == pytest.approx((0.65, 0.75))
