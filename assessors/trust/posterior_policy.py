"""The posterior trust verdict acted on: report v2 per LLM, and the fallback predictor when it says so.

:class:`PosteriorTrustPolicy` turns one LLM's graded answers into its posterior trust report
(:func:`~assessors.trust.posterior_report.posterior_trust`) and, when the verdict is one of
``fallback_on`` (default: ``out of population``) and ``fallback`` is on, a fitted fallback predictor
that replaces the latent assessor's predictions for that LLM: by default the re-levelled latent
ranking (:class:`ReleveledPredictor`); when the target prompts are unlike the training prompts,
``ood_fallback``: the "reference only" one (:class:`ReferenceOnlyPredictor`) by default, or the one
``train.py`` chose on held-out groups of training prompts (``population``, :class:`PopulationPredictor`,
among them). :func:`make_posterior_trust_fn` is the LLM registry's hook for a model with a latent assessor:
``fn(reference (n_ref,)) -> (report dict, predictor or None)``; the engine then scores such an LLM
with the predictor (``predict.py`` and the HTTP API say which predictor was used). Its reports are
about the reference prompts, or about the ``target`` prompts it is given (the server's candidate
pool), and say which in ``target``.

The thresholds and the fallback are, in this order of precedence: options given explicitly
(``trust.posterior``), the ones ``train.py`` chose on the validation LLMs and stored with the model
(``AssessorModel.trust_policy``, see :class:`~assessors.trust.validated_policy.ValidatedTrustPolicy`),
the stated defaults (:func:`policy_options`). Every report says which in ``policy.source``.
"""
from __future__ import annotations

import functools
import inspect
import logging
from typing import Callable, Mapping, Sequence

import numpy as np

from assessors.core.evidence import Evidence
from assessors.errors import ConfigError
from assessors.tags import capability
from assessors.trust.population import POPULATION_NAME, PopulationPredictor
from assessors.trust.posterior_report import OUT, OUT_FLAGS, posterior_trust
from assessors.trust.reference_only import FALLBACK_NAME, ReferenceOnlyPredictor
from assessors.trust.relevel import RELEVEL_NAME, ReleveledPredictor
from assessors.trust.served_band import check_bands, served_accuracy_band, served_auc_band
from assessors.trust.target import POOL_TARGET, REFERENCE_TARGET, target_prompts

log = logging.getLogger(__name__)
_LEVEL = inspect.signature(posterior_trust).parameters["level"].default  # the report's band level

#: The fallbacks a trust verdict can switch an LLM to.
FALLBACKS = (RELEVEL_NAME, FALLBACK_NAME, POPULATION_NAME)
#: Where the thresholds come from when neither the model nor the config gives them.
STATED_DEFAULTS = "stated defaults"
#: The report options a validated policy chooses: thresholds, band widening and the muted flags (the rest of
#: its options are the fallback's).
THRESHOLDS = ("misfit_alpha", "range_margin", "max_width", "band_scale", "auc_band_scale", "muted_flags")
#: The options a validated policy chooses and a model may store.
POLICY_KEYS = THRESHOLDS + ("fallback_kind", "fallback_flags", "ood_fallback", "ood_auc_bands", "ood_accuracy_bands")


def fallback_predictor(kind: str, assessor, X_answered, y, C: float = 1.0, prior_sd: float = 3.0, population=None):
    """The fallback predictor ``kind`` (one of :data:`FALLBACKS`) fitted on one LLM's answers
    (``population``: the fitted :class:`~assessors.trust.population.PopulationDifficulty` it needs)."""
    if kind == RELEVEL_NAME:
        return ReleveledPredictor(assessor, X_answered, y, prior_sd=prior_sd)
    if kind == FALLBACK_NAME:
        return ReferenceOnlyPredictor(assessor, X_answered, y, C=C)
    if kind == POPULATION_NAME:
        return PopulationPredictor(required(population), X_answered, y, prior_sd=prior_sd)
    raise ConfigError(f"unknown trust fallback {kind!r}; choose one of {list(FALLBACKS)}")


def fitted_population(prompt_ood):
    """The population model a fitted prompt-side signal holds (None: no signal, or none fitted)."""
    return getattr(prompt_ood, "population_", None)


def required(population):
    """``population``, or the :class:`ConfigError` naming the fix when a ``population`` fallback has none."""
    if population is None:
        raise ConfigError("the population trust fallback needs a model trained with a population model "
                          "(trust.prompt_ood.population, on by default for assessor=latent); retrain, or set "
                          "trust.posterior.ood_fallback=reference_only")
    return population


class PosteriorTrustPolicy:
    """Posterior trust report of an LLM and, when its verdict says so, the fallback predictor.

    Parameters
    ----------
    fallback : bool
        Apply the fallback when the verdict is in ``fallback_on`` (False: report only).
    fallback_on : sequence of str
        Verdicts that switch an LLM to the fallback (``out of population``, ``uncertain``, ``ok``).
    fallback_flags : sequence of str, optional
        Apply the fallback only when the report also raises one of these flags (e.g. ``[misfit]``).
        None: any. ``prompts_out_of_distribution`` always triggers ``ood_fallback``.
    fallback_kind : str
        ``releveled`` (default: the latent ranking, its level shifted to the LLM's answers; keeps
        the latent AUC) or ``reference_only`` (a logistic regression on the LLM's own answers).
    ood_fallback : str
        The fallback when the target prompts are unlike the training prompts (the latent ranking
        itself is suspect there): ``reference_only`` by default; ``population`` needs a
        ``prompt_ood`` with a fitted population model.
    ood_auc_bands : mapping of str to [low, high], optional
        Per fallback, the AUC band it reached on held-out subtasks of the training prompts (chosen
        with ``ood_fallback`` by ``train.py``): the report's ``fallback.auc_band`` when it applies that
        fallback to such prompts (see :func:`served_auc_band`).
    ood_accuracy_bands : mapping of str to [low, high], optional
        Per fallback, the interval of its accuracy error (realised minus mean prediction) on the same
        held-out subtasks: the report's ``fallback.accuracy_band`` around the fallback's mean prediction
        when it applies that fallback to such prompts (see :func:`served_accuracy_band`).
    C : float
        Inverse regularisation of the reference-only logistic regression.
    prior_sd : float
        Prior standard deviation of the re-levelled fallback's logit offset.
    prompt_ood : PromptOOD, optional
        Fitted prompt-side out-of-distribution signal (off without one).
    source : str
        Where the thresholds and the fallback came from (reported in every report's ``policy``).
    **report_options
        Options of :func:`~assessors.trust.posterior_report.posterior_trust` (``level``,
        ``n_samples``, ``misfit_alpha``, ``max_width``, ``range_margin``, ``band_scale``,
        ``auc_band_scale``, ``muted_flags``, ``max_ood_share``, ``seed``).
    """

    def __init__(self, fallback: bool = True, fallback_on: Sequence[str] = (OUT,),
                 fallback_flags: Sequence[str] | None = None, fallback_kind: str = RELEVEL_NAME,
                 ood_fallback: str = FALLBACK_NAME, ood_auc_bands: Mapping | None = None,
                 ood_accuracy_bands: Mapping | None = None, C: float = 1.0, prior_sd: float = 3.0,
                 prompt_ood=None, source: str = STATED_DEFAULTS, **report_options):
        allowed = {"level", "n_samples", "misfit_alpha", "max_width", "range_margin", "band_scale",
                   "auc_band_scale", "muted_flags", "max_ood_share", "seed"}
        unknown = sorted(set(report_options) - allowed)
        if unknown:
            raise ConfigError(f"posterior trust report: unknown option(s) {unknown}; allowed: {sorted(allowed)}")
        muted = report_options.get("muted_flags")
        if muted is not None:
            if isinstance(muted, str) or sorted(set(muted) - set(OUT_FLAGS)):
                raise ConfigError(f"posterior trust report: muted_flags must be a list of {list(OUT_FLAGS)}, got {muted!r}")
            report_options["muted_flags"] = tuple(muted)
        if prompt_ood is not None and not callable(getattr(prompt_ood, "share", None)):
            raise ConfigError(f"posterior trust report: prompt_ood must be a fitted PromptOOD, or null/false to turn the "
                              f"prompt-side signal off; got {prompt_ood!r}")
        for kind in (fallback_kind, ood_fallback):
            if kind not in FALLBACKS:
                raise ConfigError(f"unknown trust fallback {kind!r}; choose one of {list(FALLBACKS)}")
        if fallback_kind == POPULATION_NAME or (ood_fallback == POPULATION_NAME and prompt_ood is not None):
            required(fitted_population(prompt_ood))  # without a prompt-side signal the OOD fallback never applies
        self.fallback = bool(fallback)
        self.fallback_on = tuple(fallback_on)
        self.fallback_flags = None if fallback_flags is None else tuple(fallback_flags)
        self.fallback_kind = fallback_kind
        self.ood_fallback = ood_fallback
        self.ood_auc_bands = check_bands(ood_auc_bands, FALLBACKS)
        self.ood_accuracy_bands = check_bands(ood_accuracy_bands, FALLBACKS, "ood_accuracy_bands", lowest=-1.0)
        self.C = float(C)
        self.prior_sd = float(prior_sd)
        self.prompt_ood = prompt_ood
        self.source = str(source)
        self.report_options = report_options

    def settings(self) -> dict:
        """``source`` and the thresholds and fallback in force (the report's defaults where not given)."""
        defaults = inspect.signature(posterior_trust).parameters
        out = {k: self.report_options.get(k, defaults[k].default) for k in THRESHOLDS}
        out["muted_flags"] = list(out["muted_flags"])
        flags = None if self.fallback_flags is None else list(self.fallback_flags)
        ood = None if self.prompt_ood is None else self.prompt_ood.summary()
        return {"source": self.source, **out, "fallback_kind": self.fallback_kind, "fallback_flags": flags,
                "ood_fallback": self.ood_fallback, "ood_auc_bands": self.ood_auc_bands,
                "ood_accuracy_bands": self.ood_accuracy_bands, "prompt_ood": ood}

    def choose(self, rep) -> str | None:
        """The fallback a report asks for under this policy (None: keep the latent assessor)."""
        if rep.verdict not in self.fallback_on:
            return None
        if "prompts_out_of_distribution" in rep.flags:
            return self.ood_fallback
        if self.fallback_flags is None or any(f in rep.flags for f in self.fallback_flags):
            return self.fallback_kind
        return None

    def assess(self, assessor, X_answered, y, X_target, llm: str = "new") -> tuple[dict, Callable | None]:
        """``(report dict, predictor or None)`` for one LLM.

        The dict is :meth:`PosteriorTrust.to_dict` plus ``fallback``: ``{enabled, triggered, applied,
        predictor}`` (``predictor`` is ``latent`` or one of :data:`FALLBACKS`).
        """
        y = np.asarray(y, dtype=np.float64).ravel()
        rep = posterior_trust(assessor, X_answered, y, X_target, llm=llm, prompt_ood=self.prompt_ood,
                              **self.report_options)
        kind = self.choose(rep)
        predictor = None
        if self.fallback and kind is not None and np.isfinite(y).any():
            predictor = fallback_predictor(kind, assessor, X_answered, y, C=self.C, prior_sd=self.prior_sd,
                                           population=fitted_population(self.prompt_ood))
        out = rep.to_dict()
        out["version"] = 2
        out["fallback"] = {"enabled": self.fallback, "triggered": kind is not None, "applied": predictor is not None,
                           **self.served(rep, predictor, X_target, X_answered, y)}
        out["policy"] = self.settings()
        if kind is not None and predictor is None:
            why = "disabled (trust.fallback=false)" if not self.fallback else "impossible without answers"
            log.warning("trust verdict for %s is %r but the fallback is %s", llm, rep.message, why)
        return _json_safe(out), predictor

    def served(self, rep, predictor, X_target, X_answered, y) -> dict:
        """What the LLM is served and its bands: ``{predictor, auc_band, auc_band_from, expected_accuracy,
        accuracy_band, accuracy_band_from}`` (see :mod:`~assessors.trust.served_band`)."""
        name = predictor.name if predictor is not None else "latent"
        band, band_from = served_auc_band(rep.auc_band, rep.flags, name, self.ood_fallback, self.ood_auc_bands,
                                          rep.auc_chance_low)
        mean, answered = rep.expected_accuracy, None
        if predictor is not None:
            obs = np.isfinite(y)
            mean = float(np.mean(predictor(X_target)))
            answered = (float(y[obs].sum()), int(obs.sum()), float(np.mean(predictor(np.asarray(X_answered)[obs]))))
        acc, acc_band, acc_from = served_accuracy_band(rep.expected_accuracy, rep.accuracy_band, rep.flags, name,
                                                       self.ood_fallback, self.ood_accuracy_bands, mean, answered,
                                                       self.report_options.get("level", _LEVEL))
        return {"predictor": name, "auc_band": band, "auc_band_from": band_from, "expected_accuracy": acc,
                "accuracy_band": acc_band, "accuracy_band_from": acc_from}


def _json_safe(d):
    """NaN/inf -> None, tuples -> lists, numpy scalars -> Python (what JSON and pydantic accept)."""
    if isinstance(d, dict):
        return {k: _json_safe(v) for k, v in d.items()}
    if isinstance(d, (list, tuple)):
        return [_json_safe(v) for v in d]
    if isinstance(d, (float, np.floating)):
        return float(d) if np.isfinite(d) else None
    if isinstance(d, np.integer):
        return int(d)
    if isinstance(d, np.bool_):
        return bool(d)
    return d


def policy_options(model, options: Mapping | None = None) -> dict:
    """Keyword arguments of :class:`PosteriorTrustPolicy` for ``model``, with their ``source``.

    The options stored with the model (``model.trust_policy["options"]``, chosen on validation
    LLMs by ``train.py``; absent from older models and non-latent assessors) over the stated
    defaults, and ``options`` (explicit, e.g. ``trust.posterior``) over both, key by key. ``prompt_ood``
    is the prompt-side signal stored with the model (``model.prompt_ood``; ``prompt_ood: false`` or
    null in ``options`` turns it off).
    """
    stored = getattr(model, "trust_policy", None) or {}
    options = dict(options or {})
    source = stored.get("source") if stored.get("options") else None
    source = source or STATED_DEFAULTS
    given = sorted(k for k in options if k in POLICY_KEYS)
    if given:
        source += f"; trust.posterior sets {', '.join(given)}"
    out = {**dict(stored.get("options") or {}), **options, "source": source}
    if "prompt_ood" in options:
        out["prompt_ood"] = options["prompt_ood"] or None  # false / null: off
    else:
        out["prompt_ood"] = getattr(model, "prompt_ood", None)
    return out


def make_posterior_trust_fn(model, policy: PosteriorTrustPolicy | None = None, target=None,
                            target_source: str = POOL_TARGET, max_target: int | None = None,
                            n_available: int | None = None, **options):
    """Registry hook for an :class:`AssessorModel` with a latent assessor.

    ``fn(reference (n_ref,) or Evidence) -> (report dict, predictor or None)``: the answered reference
    items, or the answered items of an :class:`~assessors.core.evidence.Evidence` (prompts outside the
    reference set), are the evidence; ``target`` (default: the reference prompts) holds the prompts the
    expected accuracy and AUC are about, and every report names them in ``target``: ``{source,
    n_prompts}`` (``n_available`` too when ``max_target`` cut them). ``fn.accepts_evidence`` is True
    (what :class:`~assessors.routing.registry.LLMRegistry` checks). ``options`` build the policy when none
    is given, over the options stored with the model (see :func:`policy_options`); ``fn.policy`` is the
    policy applied, ``fn.target`` the report's ``target`` and ``fn.with_target(target=..., ...)`` the same
    hook (same policy) about other prompts.

    Parameters
    ----------
    target : ndarray of shape (n_target, d), optional
        Features of the target prompts (the model's featurizer), e.g. the server's candidate pool.
    target_source : str
        What ``target`` is (the report's ``target.source``; ``reference`` when ``target`` is None).
    max_target : int, optional
        Keep a seeded random subsample of this many target prompts (the report's cost grows with
        them); None: all.
    n_available : int, optional
        How many prompts ``target`` was already cut from (by :func:`subsample`, before featurizing):
        the report's ``target.n_available``.
    """
    assessor = model.assessor
    if not capability(assessor, "has_posterior"):
        raise ConfigError(f"the posterior trust report needs a latent assessor (assessor=latent); the model holds "
                          f"{type(assessor).__name__}")
    policy = policy if policy is not None else PosteriorTrustPolicy(**policy_options(model, options))
    log.info("posterior trust policy (%s): %s", policy.source,
             {k: v for k, v in policy.settings().items() if k != "source"})
    X_ref = np.asarray(assessor.reference_features_, dtype=np.float32)
    X_target, info = (X_ref, {"source": REFERENCE_TARGET, "n_prompts": len(X_ref)}) if target is None else \
        target_prompts(target, X_ref.shape[1], target_source, max_target, policy.report_options.get("seed", 0),
                       n_available)

    def fn(reference, llm: str = "new"):
        if isinstance(reference, Evidence):
            X_answered, y = reference.answered()
        else:
            r = np.asarray(reference, dtype=np.float64).ravel()
            obs = np.isfinite(r)
            X_answered, y = X_ref[obs], r[obs]
        report, predictor = policy.assess(assessor, X_answered, y, X_target, llm=llm)
        return {**report, "target": dict(info)}, predictor

    fn.accepts_evidence = True
    fn.policy = policy
    fn.target = dict(info)
    fn.with_target = functools.partial(make_posterior_trust_fn, model, policy)
    return fn


def log_posterior_trust(run, report: dict, name: str = "trust") -> None:
    """Log one report v2 to a tracking run: ``<name>/report_v2.json``, verdict tags and numeric metrics."""
    fb = report.get("fallback") or {}
    run.set_tags({f"{name}.verdict": str(report.get("verdict")), f"{name}.message": str(report.get("message")),
                  f"{name}.predictor": str(fb.get("predictor", "latent")), f"{name}.llm": str(report.get("llm"))})
    band = report.get("accuracy_band") or [None, None]
    auc_band = report.get("auc_band") or [None, None]
    served = fb.get("auc_band") or [None, None]
    served_acc = fb.get("accuracy_band") or [None, None]
    metrics = {"expected_accuracy": report.get("expected_accuracy"), "accuracy_low": band[0],
               "accuracy_high": band[1], "expected_auc": report.get("expected_auc"), "auc_low": auc_band[0],
               "auc_high": auc_band[1], "misfit_pvalue": report.get("misfit_pvalue"),
               "mahalanobis": report.get("mahalanobis"), "n_answered": report.get("n_answered"),
               "more_questions": report.get("more_questions"),
               "served_auc_low": served[0], "served_auc_high": served[1],
               "served_expected_accuracy": fb.get("expected_accuracy"), "served_accuracy_low": served_acc[0],
               "served_accuracy_high": served_acc[1],
               "out_of_population": float(report.get("verdict") == OUT),
               "fallback_applied": float(bool(fb.get("applied")))}
    run.log_metrics({f"{name}.{k}": float(v) for k, v in metrics.items() if v is not None and np.isfinite(v)})
    run.log_dict(report, f"{name}/report_v2.json")
