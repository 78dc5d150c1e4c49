"""What happened to an LLM next to its trust report: the data the verdict policy is chosen on
(:func:`llm_outcomes`, :func:`fit_validated`) and scored on (:func:`served_outcomes`, what the serving path serves)."""
from __future__ import annotations

import numpy as np

from assessors.metrics import brier, drop_unevaluated, masked_auc
from assessors.irt_math import sigmoid
from assessors.trust.fallbacks import (DEFAULT_SLOPE_SD, FALLBACKS, POPULATION_NAME, RECALIBRATED_NAME, RELEVEL_NAME,
                                      SLOPE_SDS, fallback_predictor, fit_slope_offset, fitted_population,
                                      own_predictions)
from assessors.trust.posterior_policy import described
from assessors.trust.posterior_report import posterior_trust
from assessors.trust.similarity import training_profile

PREDICTORS = ("latent",) + tuple(k for k in FALLBACKS if k != POPULATION_NAME)


def llm_outcome(assessor, X_answered, y, X_target, s_target, *, llm: str = "new", prompt_ood=None,
                slope_sd: float = DEFAULT_SLOPE_SD, slope_sds=SLOPE_SDS) -> dict:
    """One LLM's realised accuracy on the target prompts and the AUC and Brier score there of the model
    (``latent``, whatever the family) and of each fallback fitted on its answers. Arguments as :func:`llm_outcomes`'
    for one LLM (``s_target``: its row of ``S_target``; ``prompt_ood``: holds the ``population`` fallback's model;
    ``slope_sds``: the recalibrated fallback's slope priors scored as ``brier_recalibrated@<sd>``).

    Returns ``llm``, ``realised_accuracy``, ``n_answered`` and ``auc_<p>`` / ``brier_<p>`` for each of
    :data:`PREDICTORS`, and ``population`` when ``prompt_ood`` holds a population model (a fallback without
    answers is the latent prediction).
    """
    y = np.asarray(y, dtype=np.float64).ravel()
    X_answered, X_target = np.asarray(X_answered, dtype=np.float32), np.asarray(X_target, dtype=np.float32)
    seen, p_lat = np.isfinite(y), own_predictions(assessor, X_answered, y, X_target)
    population = fitted_population(prompt_ood)
    kinds = PREDICTORS[1:] + ((POPULATION_NAME,) if population is not None else ())
    fitted = {kind: fallback_predictor(kind, assessor, X_answered, y, population=population, slope_sd=slope_sd)
              for kind in kinds if seen.any()}
    preds = {"latent": p_lat, **{kind: fitted[kind](X_target) if kind in fitted else p_lat for kind in kinds}}
    s = np.asarray(s_target, dtype=np.float64)
    obs = np.isfinite(s)
    out = {"llm": llm, "realised_accuracy": float(s[obs].mean()) if obs.any() else np.nan, "n_answered": int(seen.sum()),
           **{k: v for kind, p in preds.items() for k, v in _scored(kind, s, p).items()}}
    rel = fitted.get(RELEVEL_NAME)  # the model's logits once, recalibrated under each candidate slope prior
    z_answered, z_target = (rel.logit(X_answered[seen]), rel.logit(X_target)) if rel else (None, None)
    for sd in slope_sds:
        slope, offset = fit_slope_offset(z_answered, y[seen], sd) if rel else (None, None)
        p = p_lat if rel is None else sigmoid(slope * z_target + offset)
        out[f"brier_{RECALIBRATED_NAME}@{float(sd):g}"] = brier(*drop_unevaluated(s, p))
    return out


def _scored(kind: str, s, p) -> dict:
    """``{auc_<kind>, brier_<kind>}`` of predictions ``p`` (m,) against realised success ``s`` (m,), NaN = not evaluated."""
    return {f"auc_{kind}": masked_auc(s, p), f"brier_{kind}": brier(*drop_unevaluated(s, p))}


def _per_llm(assessor, X_answered, Y, X_target, training_answers, training_reference):
    """Per row ``k`` of ``Y``: ``(k, *``:func:`~assessors.trust.posterior_policy.described` ``)``, as the serving
    registry describes an LLM."""
    T = None if training_answers is None else np.asarray(training_answers, dtype=np.float64)
    known = {"similarity_profile": None if T is None else training_profile(T),
             "training_accuracy": assessor.population_accuracy(np.asarray(X_target, dtype=np.float32),
                                                               training_reference)}
    for k, reference in enumerate(np.asarray(Y, dtype=np.float64)):
        yield k, *described(np.asarray(X_answered, dtype=np.float32), reference, T, **known)


def llm_outcomes(assessor, X_answered, Y, X_target, S_target, llms, *, prompt_ood=None, seed: int = 0,
                 training_answers=None, training_reference=None, slope_sd: float = DEFAULT_SLOPE_SD):
    """``(reports, outcomes)``: each of ``llms``' trust report about ``X_target`` and its :func:`llm_outcome`.

    Parameters
    ----------
    X_answered, Y : ndarray of shape (n, d), (k, n)
        The prompts every LLM answered (e.g. the reference prompts); row ``i`` of ``Y``: ``llms[i]``'s 0/1
        answers (NaN = not answered; left out of its evidence, as the serving registry does).
    X_target, S_target : ndarray of shape (m, d), (k, m)
        The target prompts and the realised success there (NaN = not evaluated).
    llms : sequence of str, length k
    prompt_ood, seed : optional
        The reports' (:func:`~assessors.trust.posterior_report.posterior_trust`); ``prompt_ood`` also the outcomes'.
    training_answers : ndarray of shape (n_train_llms, n), optional
        The training LLMs' answers on ``X_answered`` (the report's similarity).
    training_reference : ndarray of shape (n_train_llms, n_ref), optional
        The training LLMs' reference answers (the range of their expected accuracy, for families that
        need them: :meth:`~assessors.core.protocol.Assessor.population_accuracy`).
    slope_sd : float
        The recalibrated fallback's slope prior.
    """
    reps, outs = [], []
    for k, Xa, y, given in _per_llm(assessor, X_answered, Y, X_target, training_answers, training_reference):
        reps.append(posterior_trust(assessor, Xa, y, X_target, llm=llms[k], prompt_ood=prompt_ood, seed=seed, **given))
        outs.append(llm_outcome(assessor, Xa, y, X_target, S_target[k], llm=llms[k], prompt_ood=prompt_ood,
                                slope_sd=slope_sd))
    return reps, outs


def served_outcomes(policy, assessor, X_answered, Y, X_target, S_target, llms, *, training_answers=None,
                    training_reference=None, outcomes: bool = False) -> list[dict]:
    """What ``policy`` (a :class:`~assessors.trust.posterior_policy.PosteriorTrustPolicy`) serves each of ``llms``,
    scored: per LLM its report dict (verdict, flags, ``fallback``: the served predictor and its bands) with
    ``auc_served`` and ``brier_served`` on ``S_target``; with ``outcomes``, in the same pass, its :func:`llm_outcome`
    under the policy's prompt-side signal and fallback options (``outcome``: what happened to a test LLM, whose
    report is the one served). Arguments as :func:`llm_outcomes`'."""
    out = []
    for k, Xa, y, given in _per_llm(assessor, X_answered, Y, X_target, training_answers, training_reference):
        report, _, p = policy.serve(assessor, Xa, y, X_target, llm=llms[k], **given)
        s = np.asarray(S_target[k], dtype=np.float64)
        out.append({**report, **_scored("served", s, p)})
        if outcomes:
            out[-1]["outcome"] = llm_outcome(assessor, Xa, y, X_target, s, llm=llms[k], prompt_ood=policy.prompt_ood,
                                             slope_sd=policy.fallback_slope_sd)
    return out


def fit_validated(policy, reports, outcomes):
    """Fit ``policy`` (a ValidatedTrustPolicy) on the validation LLMs' reports and :func:`llm_outcome` dicts."""
    col = lambda k: np.array([o[k] for o in outcomes], dtype=np.float64)  # noqa: E731
    losses = [k for k in (outcomes[0] if outcomes else {}) if k.startswith("brier_")]
    return policy.fit(reports, col("realised_accuracy"), col("auc_latent"), col("auc_reference_only"),
                      {k[len("brier_"):]: col(k) for k in losses})
