"""What ``train.py`` fits for trust beside the assessor: the trust model, the posterior trust report's
prompt-side signal and population model, its thresholds and fallbacks (chosen on validation LLMs).

Everything here reads validation LLMs and training or validation prompts only, never test ones.
"""
from __future__ import annotations

import logging

import numpy as np
from hydra.utils import instantiate
from omegaconf import OmegaConf

from assessors.errors import NoPosteriorError
from assessors.tasks.prepare import Prepared
from assessors.tasks.timing import stage
from assessors.threads import budgeted, fit_threads, thread_limits

log = logging.getLogger(__name__)


def fit_trust_parts(cfg, prep: Prepared, assessor, ref_ids: list[str], run=None) -> dict:
    """``{trust_model, prompt_ood, trust_policy}``: what the model stores for its trust reports."""
    out = {"trust_model": None,  # the retired expected-AUC regression: the trust report gives the band
           "prompt_ood": fit_prompt_ood(cfg, prep, assessor, run)}
    out["trust_policy"] = fit_trust_policy(cfg, prep, assessor, ref_ids, run, prompt_ood=out["prompt_ood"])
    return out


def trust_part(prep: Prepared) -> str:
    """The prompts the trust policy is chosen on: ``trust`` (held out of the fit by
    ``trust.holdout_prompts``) when there are any, else the validation prompts."""
    return "trust" if prep.inst.get("trust") else "val"


def fit_prompt_ood(cfg, prep: Prepared, assessor, run=None):
    """The posterior trust report's prompt-side signal, fitted on the training prompts and calibrated on
    the validation prompts (``cfg.trust.prompt_ood``, :class:`~assessors.trust.prompt_ood.PromptOOD`).

    Stored with the model, so ``predict.py``, the server and onboarding flag target prompts unlike the
    training prompts. None for an assessor without a posterior, without validation prompts, or with
    ``trust.prompt_ood=null``.
    """
    node = (cfg.get("trust") or {}).get("prompt_ood")
    if node is None or not _posterior_trust(assessor) or not len(prep.inst.get("val") or []):
        return None
    # the training LLMs' success fits the population model (the prompt-side fallback) when one is configured
    ood = instantiate(node).fit(prep.X["train"], prep.X["val"], prep.S("train", "train"))
    if run is not None:
        run.log_params({f"trust_prompt_ood.{k}": v for k, v in ood.summary().items()})
    return ood


def fit_trust_policy(cfg, prep: Prepared, assessor, ref_ids: list[str], run=None, prompt_ood=None) -> dict | None:
    """Choose the posterior trust report's thresholds and fallback on the validation LLMs.

    For an assessor with a posterior (``assessor=latent``): each validation LLM is described by its
    answers on the reference prompts, as a new LLM is when served; its report and what happened are
    about the *validation* prompts (never test prompts or LLMs). ``cfg.trust.validated_policy``
    configures :class:`~assessors.trust.validated_policy.ValidatedTrustPolicy`; ``trust.fit_policy=false``
    or ``trust.validated_policy=null`` turns this off. Returns its ``record()`` (stored with the model,
    logged to ``run``), or None (no posterior, no validation LLMs, off): the model then keeps the stated
    defaults. ``prompt_ood`` (see :func:`fit_prompt_ood`) goes into the validation LLMs' reports as it will
    into served ones. The reports are about the :func:`trust_part` prompts.
    """
    from assessors.trust.posterior_eval import fit_validated, llm_outcomes

    tcfg = cfg.get("trust") or {}
    node = tcfg.get("validated_policy")
    if not _posterior_trust(assessor):
        return None
    off = not tcfg.get("fit_policy", True) or node is None
    if off or not prep.llms["val"]:
        why = "turned off" if off else "no validation LLMs"
        log.info("posterior trust policy: stated defaults (%s)", why)
        if run is not None:
            run.set_tags({"trust_policy.source": f"stated defaults ({why})"})
        return None
    part = trust_part(prep)
    # one BLAS thread: the validation LLMs' posteriors and the threshold search work on small matrices, and
    # at a budget of two the threads spin at every barrier (2.4x the wall time on two busy cores, the same record)
    with stage(prep.timings, "trust_policy_fit_s"), thread_limits(1):  # the OOD fallback's choice is timed apart
        policy = fit_validated(instantiate(node), *llm_outcomes(
            assessor, assessor.reference_features_, prep.results.matrix(prep.llms["val"], ref_ids), prep.X[part],
            prep.S("val", part), prep.llms["val"], prompt_ood=prompt_ood, seed=int(cfg.seed),
            training_answers=prep.results.matrix(prep.llms["train"], ref_ids)))
    record = with_ood_fallback(cfg, prep, policy.record(), prompt_ood, run)
    if run is not None:
        run.log_params({f"trust_policy.{k}": str(v) for k, v in record["options"].items()})
        run.set_tags({"trust_policy.source": record["source"]})
        run.log_dict(record, "trust/validated_policy.json")
    return record


def with_ood_fallback(cfg, prep: Prepared, record: dict, prompt_ood, run=None) -> dict:
    """``record`` (a validated policy's) with ``options.ood_fallback``: the fallback for target prompts unlike
    the training prompts, chosen on held-out groups of training prompts by ``cfg.trust.ood_fallback``
    (:class:`~assessors.trust.ood_fallback.OODFallbackValidation`; null: the stated default).

    ``record["ood_fallback"]`` says how it was chosen and each candidate's mean AUC; ``options.ood_auc_bands``
    and ``options.ood_accuracy_bands`` hold each candidate's AUC band and accuracy-error band on the held-out
    subtasks (what a report says of a fallback it applies to such prompts). A candidate the model cannot serve (``population`` without a population model) is
    left out.
    """
    from assessors.trust.fallbacks import POPULATION_NAME
    from assessors.trust.fallbacks import fitted_population

    node = (cfg.get("trust") or {}).get("ood_fallback")
    record = {**record, "options": dict(record["options"])}
    if node is None or prompt_ood is None:
        why = "trust.ood_fallback=null" if node is None else "no prompt-side signal"
        record["options"].update(ood_fallback="reference_only", ood_auc_bands=None, ood_accuracy_bands=None)
        record["ood_fallback"] = {"choice": "reference_only", "chosen_by": f"stated default ({why})"}
        return record
    chooser = instantiate(node)
    # the unfitted population model (refitted per fold), when the signal holds a fitted one
    population = prompt_ood.population if fitted_population(prompt_ood) is not None else None
    if population is None:
        chooser.set_params(candidates=[c for c in chooser.candidates if c != POPULATION_NAME])
    inst = prep.results.instances
    groups = (inst.loc[prep.inst["train"], "subgroup"].fillna("<none>").astype(str).to_numpy()
              if "subgroup" in inst.columns else np.zeros(len(prep.inst["train"]), dtype=str))
    threads = fit_threads(threads=cfg.get("threads"))
    with stage(prep.timings, "trust_ood_fallback_fit_s"):
        chooser.fit(lambda: instantiate(budgeted(cfg.assessor, threads)), population, prep.X["train"],
                    prep.S("train", "train"), prep.S("val", "train"), groups)
    rec = chooser.record()
    record["options"].update(ood_fallback=rec["choice"], ood_auc_bands=rec["auc_band"] or None,
                             ood_accuracy_bands=rec["accuracy_error_band"] or None)
    record["ood_fallback"] = rec
    if run is not None:
        run.log_metrics({f"trust_ood_fallback.auc_{c}": v for c, v in rec["mean_auc"].items() if v is not None})
        run.log_dict(rec, "trust/ood_fallback.json")
    return record


def _posterior_trust(assessor) -> bool:
    """Whether the posterior trust report applies: the assessor raises :class:`NoPosteriorError` without one."""
    try:
        assessor.require_posterior("the posterior trust report")
    except NoPosteriorError:
        return False
    return True
