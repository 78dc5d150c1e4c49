"""Trust report on the latent posterior: expected accuracy and AUC with bands, misfit, extrapolation, verdict.

For a new LLM with posterior ``N(theta, Sigma)`` (per ensemble member) from its answered items:

* **expected accuracy** on the user's prompts and its ``level`` band (posterior predictive,
  :meth:`LatentAssessor.predictive_accuracy`);
* **expected AUC**: abilities drawn from the posterior give "true" success probabilities, outcomes
  are drawn from them, and the AUC of the assessor's prediction against those outcomes is taken;
  the band is the central ``level`` interval over draws. The draws assume the model is right for
  this LLM and these prompts; when the verdict says it is not (``out of population``), the band's
  low end reaches down to what a chance ranking scores on the same prompts (``auc_chance_low``);
* **misfit**: the posterior predictive p-value of the observed answers' log-likelihood (how often
  answers replicated from the model are *less* likely than the observed ones; a small value means
  the answers are surprising under the model, e.g. an LLM unlike any the item parameters were
  learned from);
* **extrapolation**: the LLM's expected accuracy outside the range of the training LLMs' expected
  accuracies on the same prompts, or its ability further from the prior mean (Mahalanobis) than
  every training LLM's;
* **verdict**: ``out of population: use the fallback`` (misfit or extrapolation), ``uncertain: ask
  N more questions`` (the accuracy band is wider than ``max_width``; N from the 1/sqrt(n) shrink of
  the band), else ``ok``. Flags in ``muted_flags`` (those that only raised false alarms on the
  validation LLMs, see :class:`~assessors.trust.validated_policy.ValidatedTrustPolicy`) are reported
  as ``notes`` and do not move the verdict.

The fallback (:func:`fallback_predict`) is the "reference only" assessor: a logistic regression on
the LLM's own answers over the model's low-dimensional prompt projection.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Sequence

import numpy as np

from assessors.irt_math import sigmoid
from assessors.metrics import chance_auc_low, rank_auc

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

    @property
    def message(self) -> str:
        if self.verdict == OUT:
            return "out of population: use the fallback"
        if self.verdict == UNCERTAIN:
            return f"uncertain: ask {self.more_questions} more questions"
        return "ok"

    def to_dict(self) -> dict:
        d = asdict(self)
        d["message"] = self.message
        return {k: (float(v) if isinstance(v, np.floating) else v) for k, v in d.items()}


def _samples(assessor, post, k: int, n_per_member: int, rng):
    """Ability draws of LLM ``k``: list over members of (n_per_member, D)."""
    out = []
    for m in range(post.theta.shape[0]):
        L = np.linalg.cholesky(post.cov[m, k])
        out.append(post.theta[m, k] + rng.standard_normal((n_per_member, L.shape[0])) @ L.T)
    return out


def _logits(assessor, params, thetas, res_mean=None):
    """Logits (n_samples_total, n_items) over members' draws."""
    z = np.concatenate([th @ a.T - b for th, (a, b) in zip(thetas, params)])
    return z if res_mean is None else z + res_mean[None, :]


def posterior_trust(assessor, X_answered, y, X_target, llm: str = "new", *, level: float = 0.9,
                    n_samples: int = 300, misfit_alpha: float = 0.01, max_width: float = 0.15,
                    range_margin: float = 0.02, band_scale: float = 1.0, auc_band_scale: float = 1.0,
                    muted_flags: Sequence[str] = (), prompt_ood=None, max_ood_share: float | None = None,
                    seed: int = 0) -> PosteriorTrust:
    """Trust report of one LLM from its answers ``y`` (n,) on prompts ``X_answered`` (n, d).

    Parameters
    ----------
    assessor : LatentAssessor
        Fitted.
    X_answered : ndarray of shape (n, d)
    y : ndarray of shape (n,)
        0/1, NaN = not answered.
    X_target : ndarray of shape (m, d)
        The user's prompts (what the expected accuracy and AUC are about).
    level : float
        Band level.
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
        Flags reported as ``notes`` only (no effect on the verdict).
    prompt_ood : PromptOOD, optional
        Fitted prompt-side signal: the share of target prompts unlike the training prompts
        (:class:`~assessors.trust.prompt_ood.PromptOOD`); above ``max_ood_share`` (default: its
        own) the flag ``prompts_out_of_distribution``.
    """
    rng = np.random.default_rng(seed)
    y = np.asarray(y, dtype=np.float64).ravel()
    X_answered = np.asarray(X_answered, dtype=np.float32)
    X_target = np.asarray(X_target, dtype=np.float32)
    post = assessor.posterior(X_answered, y[None, :])
    n_ans = int(np.isfinite(y).sum())
    acc = assessor.predictive_accuracy(X_target, post, level=level, seed=seed)
    p_pred, _ = assessor.predict_posterior(X_target, post)
    # the draws below share one generator, in this order: abilities, outcomes for the AUC, replicates for the misfit
    thetas = _samples(assessor, post, 0, max(1, n_samples // post.theta.shape[0]), rng)
    params_t = list(zip(*assessor.item_parameters(X_target)))
    res_t, res_a = _residual_logits(assessor, post, X_target, X_answered)
    exp_auc, auc_band = _expected_auc(assessor, params_t, thetas, res_t, p_pred[0], level, rng)
    ppp = _misfit_pvalue(assessor, X_answered, y, thetas, res_a, rng)
    (rng_lo, rng_hi), maha, maha_max = _training_extent(assessor, post, params_t)
    ood = prompt_ood.share(X_target) if prompt_ood is not None else None
    rep = PosteriorTrust(llm=llm, n_answered=n_ans, expected_accuracy=float(acc["mean"][0]),
                         accuracy_band=(float(acc["low"][0]), float(acc["high"][0])), expected_auc=exp_auc,
                         auc_band=auc_band, misfit_pvalue=ppp, accuracy_range_training=(rng_lo, rng_hi),
                         mahalanobis=maha, mahalanobis_max_training=maha_max, prompt_ood_share=ood,
                         auc_chance_low=chance_auc_low(len(X_target), float(acc["mean"][0]), level))
    if max_ood_share is None and prompt_ood is not None:
        max_ood_share = prompt_ood.max_share
    return judge(rep, misfit_alpha=misfit_alpha, max_width=max_width, range_margin=range_margin,
                 band_scale=band_scale, auc_band_scale=auc_band_scale, muted_flags=muted_flags,
                 max_ood_share=max_ood_share)


#: Flags whose verdict is "out of population" (any of them).
OUT_FLAGS = ("misfit", "accuracy_above_training", "accuracy_below_training", "ability_beyond_training",
             "prompts_out_of_distribution")


def _scaled(centre: float, band, scale: float, lo: float, hi: float) -> tuple[float, float]:
    """``band`` widened by ``scale`` about ``centre`` (each side), clipped to [lo, hi]."""
    return (float(np.clip(centre - scale * (centre - band[0]), lo, hi)),
            float(np.clip(centre + scale * (band[1] - centre), lo, hi)))


def judge(rep: PosteriorTrust, *, misfit_alpha: float = 0.01, max_width: float = 0.15, range_margin: float = 0.02,
          band_scale: float = 1.0, auc_band_scale: float = 1.0, muted_flags: Sequence[str] = (),
          max_ood_share: float | None = None) -> PosteriorTrust:
    """Bands, flags and verdict of a report from its raw statistics under the given thresholds.

    Cheap (no sampling): the thresholds can be chosen on validation LLMs by re-judging their reports
    (``rep.accuracy_band_raw`` / ``auc_band_raw`` keep the unscaled bands). Flags in ``muted_flags``
    (never ``prior_only``) go to ``notes`` instead. An ``out of population`` verdict lowers the
    expected-AUC band's low end to ``rep.auc_chance_low``: the model's own draws cannot vouch for a
    ranking the verdict says the model does not apply to. Returns a new report.
    """
    acc_raw = rep.accuracy_band_raw or rep.accuracy_band
    auc_raw = rep.auc_band_raw or rep.auc_band
    mean_acc = rep.expected_accuracy
    band = _scaled(mean_acc, acc_raw, band_scale, 0.0, 1.0)
    auc_band = (_scaled(rep.expected_auc, auc_raw, auc_band_scale, 0.0, 1.0) if np.isfinite(rep.expected_auc)
                else tuple(auc_raw))
    flags = _flags(rep, misfit_alpha, range_margin, max_ood_share)
    notes = [f for f in flags if f in muted_flags and f != "prior_only"]
    flags = [f for f in flags if f not in notes]
    verdict, more = _verdict(flags, band[1] - band[0], rep.n_answered, max_width)
    if verdict == OUT and rep.auc_chance_low is not None and np.isfinite(rep.auc_chance_low) and np.isfinite(auc_band[0]):
        auc_band = (min(auc_band[0], rep.auc_chance_low), auc_band[1])
    return replace(rep, accuracy_band=band, auc_band=auc_band, flags=flags, notes=notes, verdict=verdict,
                   more_questions=more, accuracy_band_raw=tuple(acc_raw), auc_band_raw=tuple(auc_raw))


def _flags(rep: PosteriorTrust, misfit_alpha: float, range_margin: float, max_ood_share: float | None) -> list[str]:
    """The flags a report's raw statistics raise under the given thresholds."""
    mean_acc = rep.expected_accuracy
    rng_lo, rng_hi = rep.accuracy_range_training
    flags = []
    if mean_acc > rng_hi + range_margin:
        flags.append("accuracy_above_training")
    if mean_acc < rng_lo - range_margin:
        flags.append("accuracy_below_training")
    if rep.mahalanobis > rep.mahalanobis_max_training:
        flags.append("ability_beyond_training")
    if np.isfinite(rep.misfit_pvalue) and rep.misfit_pvalue < misfit_alpha:
        flags.append("misfit")
    if rep.n_answered == 0:
        flags.append("prior_only")
    if (max_ood_share is not None and rep.prompt_ood_share is not None and np.isfinite(rep.prompt_ood_share)
            and rep.prompt_ood_share > max_ood_share):
        flags.append("prompts_out_of_distribution")
    return flags


def _residual_logits(assessor, post, X_target, X_answered):
    """The LLM's residual logit shift on the target (m,) and answered (n,) prompts; None without a residual."""
    if post.residual is None or not post.residual.tau.any():
        return None, None
    res_t = post.residual.w[0] @ assessor.project(X_target).T
    res_a = post.residual.w[0] @ assessor.project(X_answered).T if len(X_answered) else None
    return res_t, res_a


def _expected_auc(assessor, params_t, thetas, res_t, p_pred, level: float, rng) -> tuple[float, tuple]:
    """Mean AUC of the prediction ``p_pred`` (m,) and its band: outcomes drawn from abilities drawn
    from the posterior, scored by the prediction."""
    P_true = sigmoid(_logits(assessor, params_t, thetas, res_t))
    Y_rep = rng.random(P_true.shape) < P_true
    aucs = rank_auc(Y_rep, p_pred)
    lo, hi = (1 - level) / 2, 1 - (1 - level) / 2
    auc_ok = aucs[np.isfinite(aucs)]
    if not len(auc_ok):
        return float("nan"), (np.nan, np.nan)
    return float(auc_ok.mean()), (float(np.quantile(auc_ok, lo)), float(np.quantile(auc_ok, hi)))


def _misfit_pvalue(assessor, X_answered, y, thetas, res_a, rng) -> float:
    """Posterior predictive p-value of the answers' log-likelihood (NaN without answers)."""
    obs = np.isfinite(y)
    if not obs.any():
        return float("nan")
    Z = _logits(assessor, list(zip(*assessor.item_parameters(X_answered[obs]))), thetas, None if res_a is None else res_a[obs])
    Pa = sigmoid(Z)
    ll = lambda Yb: (Yb * np.log(Pa + 1e-12) + (1 - Yb) * np.log(1 - Pa + 1e-12)).sum(1)  # noqa: E731
    ll_obs = ll(np.broadcast_to(y[obs], Pa.shape))
    ll_rep = ll((rng.random(Pa.shape) < Pa).astype(float))
    return float(np.mean(ll_rep <= ll_obs))


def _training_extent(assessor, post, params_t) -> tuple[tuple[float, float], float, float]:
    """Against the training LLMs, member by member (then averaged): the range of their expected
    accuracy on the target, the new LLM's Mahalanobis distance from the prior, and the largest
    training LLM's."""
    train_acc, maha, maha_max = [], [], []
    for m, (th_tr, prior, (a, b)) in enumerate(zip(assessor.training_abilities(), assessor.ability_priors(), params_t)):
        train_acc.append(sigmoid(th_tr @ a.T - b).mean(1))
        prec = prior.precision
        d = th_tr - prior.mean
        maha_max.append(float(np.sqrt(np.einsum("nd,de,ne->n", d, prec, d)).max()))
        dn = post.theta[m, 0] - prior.mean
        maha.append(float(np.sqrt(dn @ prec @ dn)))
    train_acc = np.mean(train_acc, 0)
    return (float(train_acc.min()), float(train_acc.max())), float(np.mean(maha)), float(np.mean(maha_max))


def _verdict(flags: list[str], width: float, n_ans: int, max_width: float) -> tuple[str, int]:
    """OUT on misfit or extrapolation; UNCERTAIN (with the answers still needed) on a wide band or
    no answers; else OK."""
    if any(f in flags for f in OUT_FLAGS):
        return OUT, 0
    if width > max_width or n_ans == 0:
        n0 = max(n_ans, 1)
        # a band of sampling width shrinks like 1/sqrt(n): answers needed for max_width, minus those given
        return UNCERTAIN, int(max(5, np.ceil(n0 * ((width / max_width) ** 2 - 1))))
    return OK, 0


def fallback_predict(assessor, X_answered, y, X_target, C: float = 1.0) -> np.ndarray:
    """The "reference only" fallback: P(success) (m,) from a logistic regression on the LLM's own answers.

    Features are the assessor's whitened prompt projection (the residual's); with one class
    answered, the answered rate (clipped away from 0 and 1) everywhere. See
    :class:`~assessors.trust.reference_only.ReferenceOnlyPredictor`.
    """
    from assessors.trust.reference_only import ReferenceOnlyPredictor

    return ReferenceOnlyPredictor(assessor, X_answered, y, C=C)(X_target)
