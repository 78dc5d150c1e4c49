"""The posterior trust verdict acted on: report v2 per LLM, and the fallback predictor when it says so.

:class:`PosteriorTrustPolicy` turns one LLM's graded answers into its posterior trust report
(:func:`~assessors.trust.posterior_report.posterior_trust`) and, when the verdict is one of
``fallback_on`` (default: ``out of population``) and ``fallback`` is on, a fitted "reference only"
predictor (:class:`ReferenceOnlyPredictor`) that replaces the latent assessor's predictions for that
LLM. :func:`make_posterior_trust_fn` is the LLM registry's hook for a model with a latent assessor:
``fn(reference (n_ref,)) -> (report dict, predictor or None)``; the engine then scores such an LLM
with the predictor (``predict.py`` and the HTTP API say which predictor was used).
"""
from __future__ import annotations

import logging
from typing import Callable, Sequence

import numpy as np

from assessors.errors import ConfigError, DataError
from assessors.trust.posterior_report import OUT, posterior_trust
from assessors.trust.reference_only import FALLBACK_NAME, ReferenceOnlyPredictor

log = logging.getLogger(__name__)



class PosteriorTrustPolicy:
    """Posterior trust report of an LLM and, when its verdict says so, the fallback predictor.

    Parameters
    ----------
    fallback : bool
        Apply the fallback when the verdict is in ``fallback_on`` (False: report only).
    fallback_on : sequence of str
        Verdicts that switch an LLM to the fallback (``out of population``, ``uncertain``, ``ok``).
    fallback_flags : sequence of str, optional
        Apply the fallback only when the report also raises one of these flags (e.g. ``[misfit]``:
        not when the LLM merely extrapolates the training LLMs' accuracy range, where the latent
        ranking held up on the frontier split; see docs/adaptive_onboarding.md). None: any.
    C : float
        Inverse regularisation of the fallback's logistic regression.
    **report_options
        Options of :func:`~assessors.trust.posterior_report.posterior_trust` (``level``,
        ``n_samples``, ``misfit_alpha``, ``max_width``, ``range_margin``, ``seed``).
    """

    def __init__(self, fallback: bool = True, fallback_on: Sequence[str] = (OUT,),
                 fallback_flags: Sequence[str] | None = None, C: float = 1.0, **report_options):
        allowed = {"level", "n_samples", "misfit_alpha", "max_width", "range_margin", "seed"}
        unknown = sorted(set(report_options) - allowed)
        if unknown:
            raise ConfigError(f"posterior trust report: unknown option(s) {unknown}; allowed: {sorted(allowed)}")
        self.fallback = bool(fallback)
        self.fallback_on = tuple(fallback_on)
        self.fallback_flags = None if fallback_flags is None else tuple(fallback_flags)
        self.C = float(C)
        self.report_options = report_options

    def assess(self, assessor, X_answered, y, X_target, llm: str = "new") -> tuple[dict, Callable | None]:
        """``(report dict, predictor or None)`` for one LLM.

        The dict is :meth:`PosteriorTrust.to_dict` plus ``fallback``: ``{enabled, applied,
        predictor}`` (``predictor`` is ``latent`` or ``reference_only``).
        """
        y = np.asarray(y, dtype=np.float64).ravel()
        rep = posterior_trust(assessor, X_answered, y, X_target, llm=llm, **self.report_options)
        triggered = rep.verdict in self.fallback_on and (
            self.fallback_flags is None or any(f in rep.flags for f in self.fallback_flags))
        predictor = None
        if self.fallback and triggered and np.isfinite(y).any():
            predictor = ReferenceOnlyPredictor(assessor, X_answered, y, C=self.C)
        out = rep.to_dict()
        out["version"] = 2
        out["fallback"] = {"enabled": self.fallback, "triggered": bool(triggered), "applied": predictor is not None,
                           "predictor": FALLBACK_NAME if predictor is not None else "latent"}
        if triggered and predictor is None:
            why = "disabled (trust.fallback=false)" if not self.fallback else "impossible without answers"
            log.warning("trust verdict for %s is %r but the fallback is %s", llm, rep.message, why)
        return _json_safe(out), predictor


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


def make_posterior_trust_fn(model, policy: PosteriorTrustPolicy | None = None, **options):
    """Registry hook for an :class:`AssessorModel` with a latent assessor.

    ``fn(reference (n_ref,)) -> (report dict, predictor or None)``: the answered reference items are
    the evidence, the reference prompts the target of the expected accuracy and AUC. ``options``
    build the policy when none is given (see :class:`PosteriorTrustPolicy`).
    """
    assessor = model.assessor
    if not hasattr(assessor, "posterior"):
        raise ConfigError(f"the posterior trust report needs a latent assessor (assessor=latent); the model holds "
                          f"{type(assessor).__name__}")
    policy = policy if policy is not None else PosteriorTrustPolicy(**options)
    X_ref = np.asarray(assessor.reference_features_, dtype=np.float32)

    def fn(reference, llm: str = "new"):
        r = np.asarray(reference, dtype=np.float64).ravel()
        obs = np.isfinite(r)
        return policy.assess(assessor, X_ref[obs], r[obs], X_ref, llm=llm)

    return fn


def log_posterior_trust(run, report: dict, name: str = "trust") -> None:
    """Log one report v2 to a tracking run: ``<name>/report_v2.json``, verdict tags and numeric metrics."""
    fb = report.get("fallback") or {}
    run.set_tags({f"{name}.verdict": str(report.get("verdict")), f"{name}.message": str(report.get("message")),
                  f"{name}.predictor": str(fb.get("predictor", "latent")), f"{name}.llm": str(report.get("llm"))})
    band = report.get("accuracy_band") or [None, None]
    auc_band = report.get("auc_band") or [None, None]
    metrics = {"expected_accuracy": report.get("expected_accuracy"), "accuracy_low": band[0],
               "accuracy_high": band[1], "expected_auc": report.get("expected_auc"), "auc_low": auc_band[0],
               "auc_high": auc_band[1], "misfit_pvalue": report.get("misfit_pvalue"),
               "mahalanobis": report.get("mahalanobis"), "n_answered": report.get("n_answered"),
               "more_questions": report.get("more_questions"),
               "out_of_population": float(report.get("verdict") == OUT),
               "fallback_applied": float(bool(fb.get("applied")))}
    run.log_metrics({f"{name}.{k}": float(v) for k, v in metrics.items() if v is not None and np.isfinite(v)})
    run.log_dict(report, f"{name}/report_v2.json")
