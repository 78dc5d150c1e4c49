"""The trust verdict acted on: the report of one LLM and, when its verdict says so, the fallback served
(:class:`PosteriorTrustPolicy`). :func:`make_trust_fn` is the LLM registry's hook for a model of any family;
its thresholds and fallback come from :func:`policy_options`, and every report names their source in ``policy.source``.
"""
from __future__ import annotations

import functools
import logging
from typing import Callable, Mapping, Sequence

import numpy as np

from assessors.core.evidence import Evidence
from assessors.errors import ConfigError
from assessors.trust.posterior_report import OPTIONS, OUT, OUT_FLAGS, posterior_trust
from assessors.trust.fallbacks import (DEFAULT_SLOPE_SD, FALLBACK_NAME, RECALIBRATED_NAME, RELEVEL_NAME, check_bands,
                                      check_fallback, fallback_predictor, fitted_population, own_predictions)
from assessors.trust.similarity import training_profile
from assessors.trust.target import POOL_TARGET, REFERENCE_TARGET, target_prompts

log = logging.getLogger(__name__)

#: Where the thresholds come from when neither the model nor the config gives them.
STATED_DEFAULTS = "stated defaults"
#: The report options a validated policy chooses: thresholds, band widening and the muted flags (the rest of
#: its options are the fallback's).
THRESHOLDS = ("misfit_alpha", "range_margin", "max_width", "band_scale", "auc_band_scale", "muted_flags")
#: The options a validated policy chooses and a model may store.
POLICY_KEYS = THRESHOLDS + ("fallback_kind", "fallback_flags", "fallback_slope_sd", "ood_fallback", "ood_auc_bands",
                            "ood_accuracy_bands")


class PosteriorTrustPolicy:
    """Trust report of an LLM and, when its verdict says so, the fallback predictor.

    Parameters
    ----------
    fallback : bool
        Apply the fallback when the verdict is in ``fallback_on`` (False: report only).
    fallback_on : sequence of str
        Verdicts that switch an LLM to the fallback.
    fallback_flags : sequence of str, optional
        Only when the report also raises one of these flags (None: any).
    fallback_kind : str
        The fallback (one of :data:`FALLBACKS`).
    ood_fallback : str
        The fallback when the target prompts are unlike the training prompts
        (``prompts_out_of_distribution``, which always triggers it).
    ood_auc_bands, ood_accuracy_bands : mapping of str to [low, high], optional
        Per fallback, its AUC band and accuracy-error band on held-out subtasks of the training prompts
        (chosen with ``ood_fallback`` by ``train.py``; see :meth:`served`).
    fallback_slope_sd : float
        The recalibrated fallback's slope prior (:class:`~assessors.trust.fallbacks.ReleveledPredictor`).
    prompt_ood : PromptOOD, optional
        Fitted prompt-side signal (off without one).
    source : str
        Where the thresholds and the fallback came from (every report's ``policy.source``).
    **report_options
        Options of the report (:data:`~assessors.trust.posterior_report.OPTIONS`: its sampling and thresholds).
    """

    def __init__(self, fallback: bool = True, fallback_on: Sequence[str] = (OUT,),
                 fallback_flags: Sequence[str] | None = None, fallback_kind: str = RECALIBRATED_NAME,
                 ood_fallback: str = FALLBACK_NAME, ood_auc_bands: Mapping | None = None,
                 ood_accuracy_bands: Mapping | None = None, fallback_slope_sd: float = DEFAULT_SLOPE_SD,
                 prompt_ood=None, source: str = STATED_DEFAULTS, **report_options):
        unknown = sorted(set(report_options) - set(OPTIONS))
        if unknown:
            raise ConfigError(f"posterior trust report: unknown option(s) {unknown}; allowed: {sorted(OPTIONS)}")
        muted = report_options.get("muted_flags")
        if muted is not None:
            if isinstance(muted, str) or sorted(set(muted) - set(OUT_FLAGS)):
                raise ConfigError(f"posterior trust report: muted_flags must be a list of {list(OUT_FLAGS)}, got {muted!r}")
            report_options["muted_flags"] = tuple(muted)
        if prompt_ood is not None and not callable(getattr(prompt_ood, "share", None)):
            raise ConfigError(f"posterior trust report: prompt_ood must be a fitted PromptOOD, or null/false to turn the "
                              f"prompt-side signal off; got {prompt_ood!r}")
        population = fitted_population(prompt_ood)
        check_fallback(fallback_kind, population)
        # without a prompt-side signal the OOD fallback never applies
        check_fallback(ood_fallback, population if prompt_ood is not None else True)
        self.fallback = bool(fallback)
        self.fallback_on = tuple(fallback_on)
        self.fallback_flags = None if fallback_flags is None else tuple(fallback_flags)
        self.fallback_kind = fallback_kind
        self.ood_fallback = ood_fallback
        self.ood_auc_bands = check_bands(ood_auc_bands)
        self.ood_accuracy_bands = check_bands(ood_accuracy_bands, "ood_accuracy_bands", lowest=-1.0)
        self.fallback_slope_sd = float(fallback_slope_sd)
        self.prompt_ood = prompt_ood
        self.source = str(source)
        self.report_options = report_options

    def settings(self) -> dict:
        """``source`` and the thresholds and fallback in force (the report's defaults where not given)."""
        out = {k: self.report_options.get(k, OPTIONS[k]) if k in THRESHOLDS else getattr(self, k) for k in POLICY_KEYS}
        for k in ("muted_flags", "fallback_flags"):  # lists, as stored and as JSON has them
            out[k] = None if out[k] is None else list(out[k])
        ood = None if self.prompt_ood is None else self.prompt_ood.summary()
        return {"source": self.source, **out, "prompt_ood": ood}

    def choose(self, rep) -> str | None:
        """The fallback a report asks for under this policy (None: keep the latent assessor)."""
        if rep.verdict not in self.fallback_on:
            return None
        if "prompts_out_of_distribution" in rep.flags:
            return self.ood_fallback
        if self.fallback_flags is None or any(f in rep.flags for f in self.fallback_flags):
            return self.fallback_kind
        return None

    def assess(self, assessor, X_answered, y, X_target, llm: str = "new", training_answers=None,
               similarity_profile=None, training_accuracy=None) -> tuple[dict, Callable | None]:
        """``(report dict, predictor or None)`` for one LLM of a fitted ``assessor`` of any family.

        The dict is :meth:`PosteriorTrust.to_dict` plus ``policy`` (:meth:`settings`) and ``fallback``: ``{enabled,
        triggered, applied}`` and what is served (:meth:`served`; ``predictor``: one of :data:`FALLBACKS`, or the
        family's name for its own predictions).
        """
        y = np.asarray(y, dtype=np.float64).ravel()
        rep = posterior_trust(assessor, X_answered, y, X_target, llm=llm, prompt_ood=self.prompt_ood,
                              training_answers=training_answers, similarity_profile=similarity_profile,
                              training_accuracy=training_accuracy, **self.report_options)
        kind = self.choose(rep)
        predictor = None
        if self.fallback and kind is not None and np.isfinite(y).any():
            predictor = fallback_predictor(kind, assessor, X_answered, y, population=fitted_population(self.prompt_ood),
                                           slope_sd=self.fallback_slope_sd)
        elif kind is not None:
            why = "disabled (trust.fallback=false)" if not self.fallback else "impossible without answers"
            log.warning("trust verdict for %s is %r but the fallback is %s", llm, rep.message, why)
        fallback = {"enabled": self.fallback, "triggered": kind is not None, "applied": predictor is not None,
                    **self.served(rep, predictor, X_target, X_answered, y, own=assessor.family_name)}
        return json_safe({**rep.to_dict(), "version": 2, "fallback": fallback, "policy": self.settings()}), predictor

    def serve(self, assessor, X_answered, y, X_target, **given) -> tuple[dict, Callable | None, np.ndarray]:
        """``(report dict, predictor or None, predictions (m,))``: :meth:`assess` (``given``: its keyword
        arguments) and the predictions served on ``X_target`` (m, d), the fallback's or the family's own."""
        report, predictor = self.assess(assessor, X_answered, y, X_target, **given)
        return report, predictor, (own_predictions(assessor, X_answered, y, X_target) if predictor is None
                                   else predictor(X_target))

    def served(self, rep, predictor, X_target, X_answered, y, own: str = "latent") -> dict:
        """What the LLM is served and its bands: ``{predictor, auc_band, auc_band_from, expected_accuracy,
        accuracy_band, accuracy_band_from}`` (``_from``: where a band comes from; None without a band; ``own``: the
        family's name, the predictor without a fallback).

        The model's own predictions (``latent``) keep the report's bands (``posterior``), the re-levelled and
        recalibrated fallbacks (the same ranking) its AUC band. ``ood_fallback`` applied to prompts out of
        distribution, with bands from held-out subtasks of the training prompts (``ood_auc_bands`` /
        ``ood_accuracy_bands``, measured by ``train.py``): its AUC band, the low end lowered to the report's
        ``auc_chance_low`` as for any ``out of population`` verdict; its mean prediction plus its accuracy-error
        band, widened to hold the report's band too (nothing tells whether the fallback's level or the model's
        transfers to such prompts). Any other fallback: no AUC band; the Wilson ``level`` interval of its
        answered rate, spanning it both where it is and moved by how much easier the fallback finds the target
        prompts (m, d) than the answered ones (n, d) (``answered level``). Bands are clipped to [0, 1].
        """
        name = own if predictor is None else predictor.name
        held_out = "prompts_out_of_distribution" in rep.flags and name == self.ood_fallback
        out = {"predictor": name, "auc_band": None, "auc_band_from": None, "expected_accuracy": rep.expected_accuracy,
               "accuracy_band": list(rep.accuracy_band), "accuracy_band_from": "posterior"}
        if held_out and name in (self.ood_auc_bands or {}):
            lo, hi = self.ood_auc_bands[name]
            lo = lo if rep.auc_chance_low is None else min(lo, float(rep.auc_chance_low))  # a NaN chance level: lo
            out.update(auc_band=[lo, hi], auc_band_from="held-out subtasks")
        elif predictor is None or name in (RELEVEL_NAME, RECALIBRATED_NAME):
            out.update(auc_band=list(rep.auc_band), auc_band_from="posterior")
        if predictor is None:
            return out
        mean = float(np.mean(predictor(X_target)))
        band, source = self._fallback_accuracy_band(rep, predictor, mean, held_out, X_answered, y)
        return {**out, "expected_accuracy": mean, "accuracy_band_from": source,
                "accuracy_band": None if band is None else [float(np.clip(v, 0.0, 1.0)) for v in band]}

    def _fallback_accuracy_band(self, rep, predictor, mean, held_out, X_answered, y):
        """``(band or None, where it comes from)`` for a fallback's mean prediction ``mean`` on the target
        prompts (see :meth:`served`)."""
        obs = np.isfinite(y)
        if held_out and predictor.name in (self.ood_accuracy_bands or {}):
            (lo, hi), (low, high) = self.ood_accuracy_bands[predictor.name], rep.accuracy_band
            return (min(mean + lo, low), max(mean + hi, high)), "held-out subtasks"
        if not obs.any():
            return None, None
        from statsmodels.stats.proportion import proportion_confint

        level = self.report_options.get("level", OPTIONS["level"])
        lo, hi = proportion_confint(int(y[obs].sum()), int(obs.sum()), alpha=1.0 - float(level), method="wilson")
        shift = mean - float(np.mean(predictor(np.asarray(X_answered)[obs])))
        return (lo + min(shift, 0.0), hi + max(shift, 0.0)), "answered level"


def json_safe(d):
    """NaN/inf -> None, tuples -> lists, numpy scalars -> Python (what JSON and pydantic accept)."""
    if isinstance(d, dict):
        return {k: json_safe(v) for k, v in d.items()}
    if isinstance(d, (list, tuple)):
        return [json_safe(v) for v in d]
    if isinstance(d, (float, np.floating)):
        return float(d) if np.isfinite(d) else None
    return d.item() if isinstance(d, (np.integer, np.bool_)) else d


def policy_options(model, options: Mapping | None = None) -> dict:
    """Keyword arguments of :class:`PosteriorTrustPolicy` for ``model``, with their ``source``.

    The options stored with the model (``model.trust_policy["options"]``, chosen on validation
    LLMs by ``train.py``; absent from older models and non-latent assessors) over the stated
    defaults, and ``options`` (explicit, e.g. ``trust.posterior``) over both, key by key. ``prompt_ood``
    is the prompt-side signal stored with the model (``model.prompt_ood``; ``prompt_ood: false`` or
    null in ``options`` turns it off).
    """
    stored, options = getattr(model, "trust_policy", None) or {}, dict(options or {})
    source = (stored.get("source") if stored.get("options") else None) or STATED_DEFAULTS
    given = sorted(k for k in options if k in POLICY_KEYS)
    if given:
        source += f"; trust.posterior sets {', '.join(given)}"
    ood = (options.pop("prompt_ood") or None) if "prompt_ood" in options else getattr(model, "prompt_ood", None)
    return {**dict(stored.get("options") or {}), **options, "source": source, "prompt_ood": ood}


def described(X_ref, reference, T=None, **known) -> tuple[np.ndarray, np.ndarray, dict]:
    """One LLM as the serving registry describes it: its answered prompts (a, d) of ``X_ref`` (n, d), its answers
    (a,) of ``reference`` (n,) (NaN = not answered: left out) and the report's keyword arguments about the
    training LLMs: their answers on the same prompts (of ``T`` (n_train_llms, n); None without) and ``known``."""
    r = np.asarray(reference, dtype=np.float64).ravel()
    obs = np.isfinite(r)
    return X_ref[obs], r[obs], {"training_answers": None if T is None else T[:, obs], **known}


def make_trust_fn(model, policy: PosteriorTrustPolicy | None = None, target=None, target_source: str = POOL_TARGET,
                  max_target: int | None = None, n_available: int | None = None, **options):
    """The registry's trust hook for an :class:`AssessorModel` of any family (the one entry point).

    ``fn(reference (n_ref,) or Evidence) -> (report dict, predictor or None)``, with ``fn.accepts_evidence``,
    ``fn.policy`` (built from ``options`` over the stored ones, :func:`policy_options`, unless given),
    ``fn.target`` (the report's ``target``: ``{source, n_prompts[, n_available]}``) and
    ``fn.with_target(target=..., ...)``: the same hook about other prompts.

    Parameters
    ----------
    target, target_source, max_target, n_available : optional
        The prompts the report is about (default: the reference prompts) and how they were or are cut to size:
        :func:`~assessors.trust.target.target_prompts`' ``target``, ``source``, ``max_target`` and ``n_available``.
    """
    assessor = model.assessor
    policy = policy if policy is not None else PosteriorTrustPolicy(**policy_options(model, options))
    log.info("posterior trust policy (%s): %s", policy.source,
             {k: v for k, v in policy.settings().items() if k != "source"})
    X_ref = np.asarray(assessor.reference_features_, dtype=np.float32)
    X_target, info = (X_ref, {"source": REFERENCE_TARGET, "n_prompts": len(X_ref)}) if target is None else \
        target_prompts(target, X_ref.shape[1], target_source, max_target, policy.report_options.get("seed", 0),
                       n_available)

    T = np.asarray(model.reference_success, dtype=np.float64)  # the training LLMs' reference answers
    profile = training_profile(T)

    @functools.cache  # the same target prompts for every LLM
    def train_acc():
        return assessor.population_accuracy(X_target, T)

    def fn(reference, llm: str = "new"):
        if isinstance(reference, Evidence):  # prompts the training LLMs may not have answered: no similarity
            (X_answered, y), given = reference.answered(), {"training_answers": None}
        else:
            X_answered, y, given = described(X_ref, reference, T)
        report, predictor = policy.assess(assessor, X_answered, y, X_target, llm=llm, similarity_profile=profile,
                                          training_accuracy=train_acc(), **given)
        return {**report, "target": dict(info)}, predictor

    fn.accepts_evidence = True
    fn.policy = policy
    fn.target = dict(info)
    fn.with_target = functools.partial(make_trust_fn, model, policy)
    return fn
