"""The trust report of one LLM: similarity, range, expected quality and data sufficiency.

``trust_report(reference_success, training_reference, ...)`` is the one entry point; predict.py,
the HTTP API (``make_trust_fn`` gives the registry hook) and MLflow (``log_trust_report``) all
show the same :class:`TrustReport`.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from assessors.trust.signals import (RangeCheck, Sufficiency, kappa, nearest, pairwise_kappa, range_check,
                                     similarity_pvalue, sufficiency, top_k_mean)

#: Flags that mean "out of population": the fallback policy reacts to these by default.
POPULATION_FLAGS = ("range_above", "range_below", "low_similarity")


@dataclass
class TrustReport:
    """Trust signals of one LLM, computed from its reference results alone.

    Attributes
    ----------
    n_reference, n_answered : int
    accuracy : float
        Mean success on answered reference items.
    similarity : float
        Mean kappa to the ``k`` nearest training LLMs (1 identical, ~0 independent).
    similarity_pvalue : float
        Share of training LLMs at most as similar to their own nearest others (conformal p-value).
    nearest : list of (name, kappa)
    range : RangeCheck
    loo_auc : float
        Generic assessor's leave-one-out AUC on the reference items (NaN if not computed).
    expected_auc, expected_auc_low, expected_auc_high : float
        Expected generic AUC on new prompts and its band (NaN without a trust model).
    reference_only_auc : float
        Cross-validated AUC of the reference-only assessor, when the caller fitted one.
    flags : list of str
        ``range_above``, ``range_below``, ``low_similarity``, ``generic_below_reference_only``,
        ``insufficient_data``.
    warnings : list of str
    """

    n_reference: int
    n_answered: int
    accuracy: float
    similarity: float
    similarity_pvalue: float
    nearest: list
    range: RangeCheck
    sufficiency: Sufficiency
    loo_auc: float = float("nan")
    expected_auc: float = float("nan")
    expected_auc_low: float = float("nan")
    expected_auc_high: float = float("nan")
    expected_method: str = "none"
    reference_only_auc: float = float("nan")
    flags: list = field(default_factory=list)
    warnings: list = field(default_factory=list)

    @property
    def out_of_population(self) -> bool:
        return any(f in POPULATION_FLAGS for f in self.flags)

    def signals(self) -> dict[str, float]:
        """Flat numeric signals (what :class:`TrustModel` and MLflow metrics consume)."""
        return {"similarity": self.similarity, "similarity_max": self.nearest[0][1] if self.nearest else math.nan,
                "similarity_pvalue": self.similarity_pvalue, "accuracy": self.accuracy,
                "range_excess": self.range.excess, "range_position": self.range.position,
                "loo_auc": self.loo_auc, "n_answered": float(self.n_answered)}

    def to_dict(self) -> dict:
        """JSON-safe dict (NaN -> None)."""
        d = asdict(self)
        d["nearest"] = [{"llm": n, "kappa": k} for n, k in self.nearest]
        d["warnings"] = list(self.sufficiency.warnings) + [w for w in self.warnings if w not in self.sufficiency.warnings]
        d.pop("sufficiency")
        d["out_of_population"] = self.out_of_population
        return json.loads(json.dumps(d, default=float), parse_constant=lambda c: None)

    def _lines(self) -> list[tuple[str, str]]:
        f = lambda x: "n/a" if x is None or x != x else f"{x:.3f}"  # noqa: E731
        near = ", ".join(f"{n} ({f(k)})" for n, k in self.nearest) or "n/a"
        sim = f"kappa {f(self.similarity)} to nearest training LLMs (p = {f(self.similarity_pvalue)}"
        sim += ", LOW)" if "low_similarity" in self.flags else ")"
        rg = self.range
        where = {"above": f"ABOVE the best by {f(rg.excess)}", "below": f"BELOW the worst by {f(rg.excess)}",
                 None: "inside"}[rg.flag]
        rows = [("similarity", f"{sim}; nearest: {near}"),
                ("range", f"accuracy {f(rg.accuracy)} vs training [{f(rg.low)}, {f(rg.high)}]: {where}")]
        if self.expected_auc == self.expected_auc:
            rows.append(("expected AUC", f"{f(self.expected_auc)} [{f(self.expected_auc_low)}, "
                                         f"{f(self.expected_auc_high)}] ({self.expected_method})"))
        if self.loo_auc == self.loo_auc:
            rows.append(("reference LOO AUC", f"{f(self.loo_auc)} (generic assessor, each reference item held out)"))
        if self.reference_only_auc == self.reference_only_auc:
            rows.append(("reference-only AUC", f"{f(self.reference_only_auc)} (cross-validated)"))
        verdict = ("OUT OF POPULATION: " if self.out_of_population else "in population") + \
            (("; " if self.out_of_population else ": ") + ", ".join(self.flags) if self.flags else "")
        rows.append(("verdict", verdict))
        return rows

    def __str__(self) -> str:
        head = (f"Trust report: {self.n_answered}/{self.n_reference} reference items answered, "
                f"accuracy {self.accuracy:.3f}")
        body = [f"  {k:<19}{v}" for k, v in self._lines()]
        warn = [f"  WARNING: {w}" for w in self.to_dict()["warnings"]]
        return "\n".join([head, *body, *warn])

    def to_markdown(self) -> str:
        rows = "\n".join(f"| {k} | {v} |" for k, v in self._lines())
        warn = "".join(f"\n- **warning**: {w}" for w in self.to_dict()["warnings"])
        return (f"**Trust report** ({self.n_answered}/{self.n_reference} reference items answered)\n\n"
                f"| signal | value |\n|---|---|\n{rows}\n{warn}")


def training_profile(training_reference, k: int = 3) -> np.ndarray:
    """Each training LLM's mean kappa to its ``k`` nearest other training LLMs, shape (n_train_llms,).

    The reference distribution for :func:`similarity_pvalue`. Constant training LLMs (all-0 or
    all-1 reference vectors) get NaN: kappa with them is 0 or undefined by construction, and
    counting them would make any new LLM look typical.
    """
    T = np.atleast_2d(np.asarray(training_reference, dtype=np.float64))
    K = pairwise_kappa(T)
    with np.errstate(invalid="ignore"):
        acc = np.nanmean(T, axis=1)
    return np.array([top_k_mean(row, k) if 0 < a < 1 else np.nan for row, a in zip(K, acc)])


def trust_report(reference_success, training_reference, training_llms: Sequence[str] | None = None, *,
                 assessor=None, trust_model=None, reference_only_auc: float = math.nan, k: int = 3,
                 range_margin: float = 0.0, similarity_alpha: float = 0.05, min_answered: float = 0.8,
                 auc_margin: float = 0.0, profile: np.ndarray | None = None) -> TrustReport:
    """Trust report for one LLM from its reference results.

    Parameters
    ----------
    reference_success : array-like of shape (n_ref,)
        The new LLM's 0/1 results on the reference items (NaN = not answered).
    training_reference : array-like of shape (n_train_llms, n_ref)
        Training LLMs' results on the same items, same order.
    training_llms : sequence of str, optional
        Names of the training LLMs (for ``nearest``); default ``llm_0, llm_1, ...``.
    assessor : GenericAssessor, optional
        Fitted generic assessor; enables the leave-one-out reference AUC.
    trust_model : TrustModel, optional
        Fitted on validation LLMs; enables the expected AUC and its band.
    reference_only_auc : float
        CV AUC of the reference-only assessor; with ``loo_auc`` gives the
        ``generic_below_reference_only`` flag (``loo_auc < reference_only_auc - auc_margin``).
    k : int
        Nearest training LLMs averaged into ``similarity``.
    range_margin : float
        Accuracy excursion outside the training range tolerated before flagging.
    similarity_alpha : float
        ``low_similarity`` when the similarity p-value is below this.
    min_answered : float
        Minimum answered reference items (fraction if < 1, else count).
    profile : ndarray of shape (n_train_llms,), optional
        Precomputed :func:`training_profile` (saves the pairwise kappa per call).
    """
    from assessors.trust.expected import loo_reference_auc

    r = np.asarray(reference_success, dtype=np.float64)
    T = np.atleast_2d(np.asarray(training_reference, dtype=np.float64))
    names = list(training_llms) if training_llms is not None else [f"llm_{i}" for i in range(len(T))]
    suff = sufficiency(r, min_answered=min_answered)
    sims = kappa(r, T)
    sim = top_k_mean(sims, k)
    prof = training_profile(T, k) if profile is None else np.asarray(profile)
    pval = similarity_pvalue(sim, prof)
    rng = range_check(r, T, margin=range_margin)
    rep = TrustReport(n_reference=suff.n_reference, n_answered=suff.n_answered, accuracy=rng.accuracy,
                      similarity=sim, similarity_pvalue=pval, nearest=nearest(sims, names, k), range=rng,
                      sufficiency=suff, reference_only_auc=float(reference_only_auc))
    if assessor is not None and suff.n_answered:
        rep.loo_auc = loo_reference_auc(assessor, r)
    if trust_model is not None:
        est = trust_model.predict(pd.DataFrame([rep.signals()])).iloc[0]
        rep.expected_auc, rep.expected_auc_low, rep.expected_auc_high = map(float, est[["estimate", "low", "high"]])
        rep.expected_method = f"trust model fitted on {trust_model.n_fit_} validation LLMs"
        if not math.isfinite(trust_model.halfwidth_):
            rep.warnings.append(f"expected-AUC band is uninformative: {trust_model.n_fit_} validation LLMs are too "
                                f"few for {1 - trust_model.alpha:.0%} coverage")
    if rng.flag:
        rep.flags.append(f"range_{rng.flag}")
        rep.warnings.append(f"reference accuracy {rng.accuracy:.3f} is {rng.flag} the training LLMs' range "
                            f"[{rng.low:.3f}, {rng.high:.3f}]: the assessor extrapolates")
    if pval == pval and pval < similarity_alpha:
        rep.flags.append("low_similarity")
        rep.warnings.append(f"this LLM is less similar to its nearest training LLMs (kappa {sim:.3f}) than "
                            f"{1 - pval:.0%} of training LLMs are to theirs")
    if rep.loo_auc == rep.loo_auc and reference_only_auc == reference_only_auc \
            and rep.loo_auc < reference_only_auc - auc_margin:
        rep.flags.append("generic_below_reference_only")
    if not suff.ok:
        rep.flags.append("insufficient_data")
    return rep


def make_trust_fn(model, trust_model=None, **kwargs) -> Callable[[np.ndarray], dict]:
    """Registry hook: ``fn(reference (n_ref,)) -> dict`` for an :class:`AssessorModel`.

    Uses the model's known LLMs as the training population and its generic assessor for the
    leave-one-out AUC; ``trust_model`` defaults to ``model.trust_model`` if the model has one.
    """
    T = np.asarray(model.reference_success, dtype=np.float64)
    tm = trust_model if trust_model is not None else getattr(model, "trust_model", None)
    prof = training_profile(T, kwargs.get("k", 3))

    def fn(reference) -> dict:
        return trust_report(reference, T, model.llms, assessor=model.assessor, trust_model=tm,
                            profile=prof, **kwargs).to_dict()

    return fn


def log_trust_report(run, report: TrustReport, name: str = "trust") -> None:
    """Log one report to a tracking run: metrics ``<name>.<signal>``, JSON and Markdown artifacts."""
    run.log_metrics({f"{name}.{k}": v for k, v in report.signals().items() if v == v})
    run.log_metrics({f"{name}.out_of_population": float(report.out_of_population)})
    run.log_dict(report.to_dict(), f"{name}/report.json")
    run.log_text(report.to_markdown(), f"{name}/report.md")
