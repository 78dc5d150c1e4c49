"""What happened to one LLM, next to its posterior trust report: the data the verdict policy is chosen on.

:func:`llm_outcome` gives an LLM's raw report about some target prompts and, on those prompts, its
realised accuracy and the AUC and Brier score of the latent assessor and of each fallback
(:func:`llm_outcomes`: of several LLMs). :func:`fit_validated` fits a
:class:`~assessors.trust.validated_policy.ValidatedTrustPolicy` on the outcomes of validation LLMs
(:func:`fit_on_validation_llms`: from their answers, what ``train.py`` and
``benchmarks/posterior_trust.py`` do); :func:`verdict_scores` scores a policy's verdicts on held-out LLMs.
"""
from __future__ import annotations

import numpy as np

from assessors.metrics import brier, masked_auc
from assessors.trust.population import POPULATION_NAME
from assessors.trust.posterior_report import OK, OUT, judge, posterior_trust

PREDICTORS = ("latent", "releveled", "reference_only")


def llm_outcome(assessor, X_answered, y, X_target, s_target, *, llm: str = "new", prompt_ood=None, seed: int = 0,
                C: float = 1.0, prior_sd: float = 3.0):
    """``(report, outcome dict)`` of one LLM.

    Parameters
    ----------
    X_answered : ndarray of shape (n, d)
    y : ndarray of shape (n,)
        The LLM's 0/1 answers (NaN = not answered): the evidence.
    X_target : ndarray of shape (m, d)
    s_target : ndarray of shape (m,)
        Its realised success on the target prompts (NaN = not evaluated).

    The outcome holds ``realised_accuracy``, ``n_answered``, ``answered_successes`` and ``auc_<p>`` /
    ``brier_<p>`` / ``mean_<p>`` (mean prediction on the evaluated target prompts) for each of
    :data:`PREDICTORS`, and ``population`` when ``prompt_ood`` holds a population model (a fallback without
    answers is the latent prediction); ``mean_answered_<p>`` is a fallback's mean prediction on the answered
    prompts.
    """
    from assessors.trust.posterior_policy import fallback_predictor, fitted_population

    y = np.asarray(y, dtype=np.float64).ravel()
    X_answered, X_target = np.asarray(X_answered, dtype=np.float32), np.asarray(X_target, dtype=np.float32)
    rep = posterior_trust(assessor, X_answered, y, X_target, llm=llm, prompt_ood=prompt_ood, seed=seed)
    p_lat = assessor.predict_posterior(X_target, assessor.posterior(X_answered, y[None, :]))[0][0]
    preds = {"latent": p_lat}
    population = fitted_population(prompt_ood)
    seen = np.isfinite(y)
    fitted = {kind: fallback_predictor(kind, assessor, X_answered, y, C=C, prior_sd=prior_sd, population=population)
              for kind in PREDICTORS[1:] + ((POPULATION_NAME,) if population is not None else ()) if seen.any()}
    preds.update({kind: f(X_target) for kind, f in fitted.items()})
    s = np.asarray(s_target, dtype=np.float64)
    obs = np.isfinite(s)
    out = {"llm": llm, "realised_accuracy": float(s[obs].mean()) if obs.any() else np.nan,
           "n_answered": int(seen.sum()), "answered_successes": float(y[seen].sum())}
    # what a served fallback's accuracy band is built on: its mean prediction on the answered prompts
    out.update({f"mean_answered_{kind}": float(np.mean(f(X_answered[seen]))) for kind, f in fitted.items()})
    for kind in PREDICTORS[1:] + ((POPULATION_NAME,) if population is not None else ()):
        preds.setdefault(kind, p_lat)  # without answers a fallback is the latent prediction
    for kind, p in preds.items():
        out[f"auc_{kind}"] = masked_auc(s, p)
        out[f"brier_{kind}"] = brier(s[obs], np.asarray(p)[obs]) if obs.any() else np.nan
        out[f"mean_{kind}"] = float(np.asarray(p)[obs].mean()) if obs.any() else np.nan
    return rep, out


def llm_outcomes(assessor, X_answered, Y, X_target, S_target, llms, *, prompt_ood=None, seed: int = 0):
    """``(reports, outcomes)``: :func:`llm_outcome` of each of ``llms``.

    Parameters
    ----------
    X_answered : ndarray of shape (n, d)
        The prompts every LLM answered (e.g. the reference prompts).
    Y : ndarray of shape (k, n)
        Row ``i``: ``llms[i]``'s 0/1 answers (NaN = not answered; left out of its evidence, as the
        serving registry does).
    X_target : ndarray of shape (m, d)
    S_target : ndarray of shape (k, m)
        Realised success on the target prompts (NaN = not evaluated).
    llms : sequence of str, length k
    """
    X_answered, Y = np.asarray(X_answered, dtype=np.float32), np.asarray(Y, dtype=np.float64)
    reps, outs = [], []
    for k, llm in enumerate(llms):
        obs = np.isfinite(Y[k])
        r, o = llm_outcome(assessor, X_answered[obs], Y[k, obs], X_target, S_target[k], llm=llm,
                           prompt_ood=prompt_ood, seed=seed)
        reps.append(r)
        outs.append(o)
    return reps, outs


def fit_on_validation_llms(policy, assessor, X_answered, Y, X_target, S_target, llms, *, prompt_ood=None,
                           seed: int = 0):
    """Fit ``policy`` (a ValidatedTrustPolicy) on validation LLMs from their answers (see :func:`llm_outcomes`).

    ``Y`` (k, n): the validation LLMs' answers on ``X_answered`` (n, d), the reference prompts;
    ``X_target`` (m, d) / ``S_target`` (k, m): the *validation* prompts and what happened on them.
    Returns the fitted ``policy``.
    """
    reps, outs = llm_outcomes(assessor, X_answered, Y, X_target, S_target, llms, prompt_ood=prompt_ood, seed=seed)
    return fit_validated(policy, reps, outs)


def fit_validated(policy, reports, outcomes):
    """Fit ``policy`` (a ValidatedTrustPolicy) on the validation LLMs' reports and :func:`llm_outcome` dicts."""
    col = lambda k: np.array([o[k] for o in outcomes], dtype=np.float64)  # noqa: E731
    return policy.fit(reports, col("realised_accuracy"), col("auc_latent"), col("auc_reference_only"),
                      {k: col(f"brier_{k}") for k in PREDICTORS})


def verdict_rows(reports, outcomes, choose, ood_fallback=None, ood_auc_bands=None, ood_accuracy_bands=None,
                 **thresholds) -> list[dict]:
    """One row per held-out LLM: its re-judged verdict, whether it failed, the fallback applied and its AUC.

    ``reports`` are re-judged with ``thresholds`` (see :func:`judge`); ``choose(report)`` names the
    fallback applied (None: the latent assessor). A *failure* is a latent AUC below the
    reference-only fallback's, or a realised accuracy outside the (judged) band. ``served_auc_band`` is
    the band of what the LLM is served (:func:`~assessors.trust.served_band.served_auc_band`, with the
    policy's ``ood_fallback`` and ``ood_auc_bands``) and ``served_auc_in_band`` whether the served
    predictor's AUC lies in it (None without a band); ``served_accuracy_band`` / ``served_accuracy_in_band``
    the same for the accuracy (:func:`~assessors.trust.served_band.served_accuracy_band`, with
    ``ood_accuracy_bands``).
    """
    from assessors.trust.served_band import served_accuracy_band, served_auc_band

    rows = []
    for r, o in zip(reports, outcomes):
        j = judge(r, **thresholds)
        acc_in = j.accuracy_band[0] <= o["realised_accuracy"] <= j.accuracy_band[1]
        fb = choose(j) or "latent"
        band, band_from = served_auc_band(j.auc_band, j.flags, fb, ood_fallback, ood_auc_bands, j.auc_chance_low)
        served_in = None if band is None else bool(band[0] <= o[f"auc_{fb}"] <= band[1])
        answered = ((o["answered_successes"], o["n_answered"], o[f"mean_answered_{fb}"])
                    if f"mean_answered_{fb}" in o else None)
        _, acc_band, acc_from = served_accuracy_band(j.expected_accuracy, j.accuracy_band, j.flags, fb, ood_fallback,
                                                     ood_accuracy_bands, o.get(f"mean_{fb}", np.nan), answered)
        acc_served_in = None if acc_band is None else bool(acc_band[0] <= o["realised_accuracy"] <= acc_band[1])
        rows.append({"llm": o["llm"], "verdict": j.verdict, "flags": j.flags, "notes": j.notes,
                     "failure": bool(o["auc_latent"] < o["auc_reference_only"] or not acc_in),
                     "fallback": fb, "auc_with_fallback": o[f"auc_{fb}"], "brier_with_fallback": o[f"brier_{fb}"],
                     "accuracy_in_band": bool(acc_in), "auc_in_band": bool(j.auc_band[0] <= o["auc_latent"] <= j.auc_band[1]),
                     "served_auc_band": band, "served_auc_band_from": band_from, "served_auc_in_band": served_in,
                     "served_accuracy_band": acc_band, "served_accuracy_band_from": acc_from,
                     "served_accuracy_in_band": acc_served_in,
                     "expected_accuracy": j.expected_accuracy, "accuracy_band": list(j.accuracy_band),
                     "auc_band": list(j.auc_band), "prompt_ood_share": j.prompt_ood_share,
                     **{k: v for k, v in o.items() if k != "llm"}})
    return rows


def _served_coverage(rows, what: str, n_key: str) -> dict:
    """Share of the rows with a served ``what`` band whose realised value lies in it, and how many have one."""
    inside = [r[f"served_{what}_in_band"] for r in rows if r[f"served_{what}_in_band"] is not None]
    return {f"served_{what}_band_coverage": float(np.mean(inside)) if inside else None, n_key: len(inside)}


def _mean(rows, key, sel):
    return float(np.nanmean([r[key] for r, s in zip(rows, sel) if s])) if sel.any() else None


def verdict_scores(reports, outcomes, choose, ood_fallback=None, ood_auc_bands=None, ood_accuracy_bands=None,
                   **thresholds) -> dict:
    """Recall, false alarms, band coverage and AUC with the fallback of held-out LLMs (see :func:`verdict_rows`).

    Flagged = a verdict other than ``ok``; recall = flagged failures over failures; false alarms =
    flagged LLMs that did not fail over flagged LLMs. ``served_auc_band_coverage``: the share of LLMs
    with a served band whose served AUC lies in it (``n_served_band`` of them have one);
    ``served_accuracy_band_coverage`` the same for the realised accuracy.
    """
    rows = verdict_rows(reports, outcomes, choose, ood_fallback, ood_auc_bands, ood_accuracy_bands, **thresholds)
    fail = np.array([r["failure"] for r in rows])
    flagged = np.array([r["verdict"] != OK for r in rows])
    applied = np.array([r["fallback"] != "latent" for r in rows])
    every = np.ones(len(rows), dtype=bool)
    return {"n_llms": len(rows), "n_failures": int(fail.sum()), "n_flagged": int(flagged.sum()),
            "n_out_of_population": int(sum(r["verdict"] == OUT for r in rows)),
            "n_fallback": int(applied.sum()), "n_flagged_failures": int((flagged & fail).sum()),
            "recall": float(flagged[fail].mean()) if fail.any() else None,
            "false_alarm_rate": float((~fail[flagged]).mean()) if flagged.any() else None,
            "auc_band_coverage": float(np.mean([r["auc_in_band"] for r in rows])),
            "accuracy_band_coverage": float(np.mean([r["accuracy_in_band"] for r in rows])),
            **_served_coverage(rows, "auc", "n_served_band"),
            **_served_coverage(rows, "accuracy", "n_served_accuracy_band"),
            **{f"mean_auc_{k}": _mean(rows, f"auc_{k}", every) for k in ("latent", "reference_only", "with_fallback")},
            "fallback_llms_auc": {k: _mean(rows, f"auc_{k}", applied) for k in ("with_fallback", "reference_only", "latent")},
            "other_llms_auc": {k: _mean(rows, f"auc_{k}", ~applied) for k in ("with_fallback", "latent")},
            "llms": rows}
