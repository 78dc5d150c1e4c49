"""The trust report of one LLM, for every assessor family: expected accuracy and AUC with bands, misfit,
extrapolation and a verdict, from its answered items (the family's
:meth:`~assessors.core.protocol.Assessor.trust_statistics` gives its predictions and draws; a family
without a spread has the prediction as its only draw).

* **expected accuracy** on the target prompts and its ``level`` band;
* **expected AUC**: outcomes drawn from the drawn success probabilities, scored by the prediction; the
  band is the central ``level`` interval. The draws assume the model is right for this LLM; when the
  verdict says it is not, the band's low end reaches what a chance ranking scores (``auc_chance_low``);
* **misfit**: the predictive p-value of the answers' log-likelihood (how often replicated answers are
  *less* likely than the observed ones);
* **similarity**: answers less alike to the training LLMs' than theirs are to each other (``low_similarity``);
* **extrapolation**: the expected accuracy outside the training LLMs' range on the same prompts, or a
  state farther from the prior than every training LLM's (``mahalanobis``, latent family);
* **verdict**: ``out of population: use the fallback`` (misfit, extrapolation, prompts out of
  distribution, low similarity), ``uncertain: ask N more questions`` (accuracy band wider than ``max_width``), else
  ``ok``. Flags in ``muted_flags`` are ``notes`` only.
"""
from __future__ import annotations

import inspect
from dataclasses import asdict, dataclass, field, replace
from typing import Sequence

import numpy as np

from assessors.core.evidence import Evidence
from assessors.metrics import central_interval, chance_auc_low, rank_auc
from assessors.trust.similarity import similarity

OK, UNCERTAIN, OUT = "ok", "uncertain", "out of population"


@dataclass
class PosteriorTrust:
    """Trust report of one LLM (see the module docstring); ``to_dict`` is what APIs return."""

    llm: str
    n_answered: int
    expected_accuracy: float
    accuracy_band: tuple[float, float]
    expected_auc: float
    auc_band: tuple[float, float]
    misfit_pvalue: float
    accuracy_range_training: tuple[float, float]
    mahalanobis: float
    mahalanobis_max_training: float
    flags: list[str] = field(default_factory=list)
    verdict: str = OK
    more_questions: int = 0
    prompt_ood_share: float | None = None
    accuracy_band_raw: tuple[float, float] | None = None
    auc_band_raw: tuple[float, float] | None = None
    notes: list[str] = field(default_factory=list)
    auc_chance_low: float | None = None
    similarity: float | None = None
    similarity_pvalue: float | None = None

    @property
    def message(self) -> str:
        return {OUT: "out of population: use the fallback",
                UNCERTAIN: f"uncertain: ask {self.more_questions} more questions"}.get(self.verdict, OK)

    def to_dict(self) -> dict:
        return {**asdict(self), "message": self.message}


def posterior_trust(assessor, X_answered, y, X_target, llm: str = "new", prompt_ood=None, training_answers=None,
                    similarity_profile=None, training_accuracy=None, *, level: float = 0.9, n_samples: int = 300,
                    seed: int = 0, **thresholds) -> PosteriorTrust:
    """Trust report of one LLM from its answers ``y`` (n,) on prompts ``X_answered`` (n, d).

    Parameters
    ----------
    assessor : Assessor
        A fitted assessor of any family (:class:`~assessors.core.protocol.Assessor`).
    X_answered, y : ndarray of shape (n, d), (n,)
        The LLM's graded items (:class:`~assessors.core.evidence.Evidence`'s ``X`` and ``y``).
    X_target : ndarray of shape (m, d)
        The user's prompts (what the expected accuracy and AUC are about).
    level : float
        Band level.
    prompt_ood : PromptOOD, optional
        Fitted prompt-side signal: the share of target prompts unlike the training prompts
        (:class:`~assessors.trust.prompt_ood.PromptOOD`); above ``max_ood_share`` (default: its
        own) the flag ``prompts_out_of_distribution``.
    training_answers : ndarray of shape (n_train_llms, n), optional
        The training LLMs' answers on the same prompts: the similarity and, below ``similarity_alpha``
        (its p-value), the flag ``low_similarity`` (:mod:`~assessors.trust.similarity`;
        ``similarity_profile`` is their :func:`~assessors.trust.similarity.training_profile`).
    training_accuracy : ndarray of shape (n_train_llms,), optional
        The training LLMs' expected accuracy on ``X_target`` (default: the family's
        :meth:`~assessors.core.protocol.Assessor.population_accuracy` without their reference answers).
    **thresholds
        Of :func:`judge` (its defaults where not given).
    """
    rng = np.random.default_rng(seed)
    ev = Evidence(X_answered, y)
    X_target = np.asarray(X_target, dtype=np.float32)
    st = assessor.trust_statistics(ev, X_target, level=level, n_samples=n_samples, rng=rng, seed=seed)
    # the draws share one generator, in this order: abilities, outcomes for the AUC, replicates for the misfit
    exp_auc, auc_band = _expected_auc(st.P_target, st.p_target, level, rng)
    ppp = _misfit_pvalue(st.P_answered, ev.answered()[1], rng)
    train_acc = np.asarray(assessor.population_accuracy(X_target) if training_accuracy is None else training_accuracy,
                           dtype=np.float64)
    ood = prompt_ood.share(X_target) if prompt_ood is not None else None
    sim, sim_p = (None, None) if training_answers is None else similarity(ev.y, training_answers, similarity_profile)
    rep = PosteriorTrust(llm=llm, n_answered=ev.n_answered, expected_accuracy=st.expected_accuracy,
                         accuracy_band=st.accuracy_band, expected_auc=exp_auc, auc_band=auc_band,
                         misfit_pvalue=ppp, accuracy_range_training=(float(np.min(train_acc)), float(np.max(train_acc))),
                         mahalanobis=st.distance, mahalanobis_max_training=st.distance_max, prompt_ood_share=ood,
                         auc_chance_low=chance_auc_low(len(X_target), st.expected_accuracy, level), similarity=sim,
                         similarity_pvalue=sim_p)
    if thresholds.get("max_ood_share") is None and prompt_ood is not None:
        thresholds["max_ood_share"] = prompt_ood.max_share
    return judge(rep, **thresholds)


#: Flags whose verdict is "out of population" (any of them).
OUT_FLAGS = ("misfit", "accuracy_above_training", "accuracy_below_training", "ability_beyond_training",
             "prompts_out_of_distribution", "low_similarity")


def _scaled(centre: float, band, scale: float) -> tuple[float, float]:
    """``band`` widened by ``scale`` about ``centre`` (each side), clipped to [0, 1]."""
    return (float(np.clip(centre - scale * (centre - band[0]), 0.0, 1.0)),
            float(np.clip(centre + scale * (band[1] - centre), 0.0, 1.0)))


def judge(rep: PosteriorTrust, *, misfit_alpha: float = 0.01, max_width: float = 0.15, range_margin: float = 0.02,
          band_scale: float = 1.0, auc_band_scale: float = 1.0, muted_flags: Sequence[str] = (),
          max_ood_share: float | None = None, similarity_alpha: float = 0.05) -> PosteriorTrust:
    """Bands, flags and verdict of a report from its raw statistics under the given thresholds.

    Cheap (no sampling): the thresholds can be chosen on validation LLMs by re-judging their reports
    (``rep.accuracy_band_raw`` / ``auc_band_raw`` keep the unscaled bands). An ``out of population``
    verdict lowers the AUC band's low end to ``rep.auc_chance_low`` (the module docstring). Returns a new report.

    Parameters
    ----------
    misfit_alpha : float
        Posterior predictive p-value below which the answers are called misfitting.
    max_width : float
        Widest acceptable accuracy band before the verdict asks for more questions.
    range_margin : float
        Expected accuracy this far outside the training LLMs' range counts as extrapolation.
    band_scale, auc_band_scale : float
        Widen (> 1) the accuracy and expected-AUC bands about their centre (calibrated on validation
        LLMs by :class:`~assessors.trust.validated_policy.ValidatedTrustPolicy`).
    muted_flags : sequence of str
        Flags reported as ``notes`` only, no effect on the verdict (never ``prior_only``).
    max_ood_share, similarity_alpha : float
        Above / below them ``prompts_out_of_distribution`` / ``low_similarity`` (see :func:`posterior_trust`).
    """
    acc_raw = rep.accuracy_band_raw or rep.accuracy_band
    auc_raw = rep.auc_band_raw or rep.auc_band
    band = _scaled(rep.expected_accuracy, acc_raw, band_scale)
    auc_band = (_scaled(rep.expected_auc, auc_raw, auc_band_scale) if np.isfinite(rep.expected_auc)
                else tuple(auc_raw))
    flags = _flags(rep, misfit_alpha, range_margin, max_ood_share, similarity_alpha)
    notes = [f for f in flags if f in muted_flags and f != "prior_only"]
    flags = [f for f in flags if f not in notes]
    verdict, more = _verdict(flags, band[1] - band[0], rep.n_answered, max_width)
    if verdict == OUT and rep.auc_chance_low is not None:  # min() keeps a NaN end, and ignores a NaN chance level
        auc_band = (min(auc_band[0], rep.auc_chance_low), auc_band[1])
    return replace(rep, accuracy_band=band, auc_band=auc_band, flags=flags, notes=notes, verdict=verdict,
                   more_questions=more, accuracy_band_raw=tuple(acc_raw), auc_band_raw=tuple(auc_raw))


def _flags(rep: PosteriorTrust, misfit_alpha: float, range_margin: float, max_ood_share: float | None,
           similarity_alpha: float) -> list[str]:
    """The flags a report's raw statistics raise under the given thresholds, in this order."""
    lo, hi = rep.accuracy_range_training
    ood, sim_p = rep.prompt_ood_share, rep.similarity_pvalue
    raised = {"accuracy_above_training": rep.expected_accuracy > hi + range_margin,
              "accuracy_below_training": rep.expected_accuracy < lo - range_margin,
              "ability_beyond_training": rep.mahalanobis > rep.mahalanobis_max_training,
              "misfit": rep.misfit_pvalue < misfit_alpha,  # a NaN statistic compares false: no flag (None: off)
              "prior_only": rep.n_answered == 0,
              "prompts_out_of_distribution": None not in (ood, max_ood_share) and ood > max_ood_share,
              "low_similarity": sim_p is not None and sim_p < similarity_alpha}
    return [f for f, on in raised.items() if on]


def _expected_auc(P_true, p_pred, level: float, rng) -> tuple[float, tuple]:
    """Mean AUC of the prediction ``p_pred`` (m,) and its band: outcomes drawn from the true success
    probabilities drawn from the state (``P_true``, (n_draws, m)), scored by the prediction."""
    aucs = rank_auc(rng.random(P_true.shape) < P_true, p_pred)
    auc_ok = aucs[np.isfinite(aucs)]
    if not len(auc_ok):
        return float("nan"), (np.nan, np.nan)
    return float(auc_ok.mean()), central_interval(auc_ok, level)


def _misfit_pvalue(Pa, y_obs, rng) -> float:
    """Posterior predictive p-value of the answers' log-likelihood: ``Pa`` (n_draws, n) the drawn success
    probabilities of the answered items, ``y_obs`` (n,) the answers (NaN without answers)."""
    if Pa is None or not len(y_obs):
        return float("nan")
    ll = lambda Yb: (Yb * np.log(Pa + 1e-12) + (1 - Yb) * np.log(1 - Pa + 1e-12)).sum(1)  # noqa: E731
    ll_obs = ll(np.broadcast_to(y_obs, Pa.shape))
    ll_rep = ll((rng.random(Pa.shape) < Pa).astype(float))
    return float(np.mean(ll_rep <= ll_obs))


def _verdict(flags: list[str], width: float, n_ans: int, max_width: float) -> tuple[str, int]:
    """The verdict (see the module docstring) and the answers still needed for ``max_width``."""
    if any(f in flags for f in OUT_FLAGS):
        return OUT, 0
    if width > max_width or n_ans == 0:
        n0 = max(n_ans, 1)
        # a band of sampling width shrinks like 1/sqrt(n): answers needed for max_width, minus those given
        return UNCERTAIN, int(max(5, np.ceil(n0 * ((width / max_width) ** 2 - 1))))
    return OK, 0


#: The report's options and their defaults: :func:`posterior_trust`'s sampling and :func:`judge`'s thresholds (their
#: keyword-only arguments; the others are the LLM's, the model's and the training LLMs').
OPTIONS = {k: p.default for f in (posterior_trust, judge) for k, p in inspect.signature(f).parameters.items()
           if p.kind is p.KEYWORD_ONLY}
