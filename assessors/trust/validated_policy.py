"""Thresholds and fallback of the trust report, chosen on validation LLMs.

:class:`ValidatedTrustPolicy` takes the validation LLMs' reports about the validation prompts (each LLM
described by its reference answers) and what happened there, and chooses, in this order:

1. ``band_scale`` / ``auc_band_scale``: the smallest widening of the accuracy / expected-AUC band whose
   coverage of the realised accuracy / model AUC reaches ``level``;
2. ``misfit_alpha``, ``range_margin``, ``max_width``: the grid point with the best recall of the
   *failures* (model AUC below the reference-only fallback's, or realised accuracy outside the band) with
   at most ``max_false_alarms`` false alarms;
3. the quiet rule (``quiet_flags``): a flag raised on at least ``min_triggered`` LLMs, none of them a
   failure, and on LLMs whose loss no fallback lowers by ``min_loss_gain``, is muted (a note); ``max_width``
   is raised while its ``uncertain`` verdicts fall on ``min_triggered`` or more LLMs and on no failure
   (a warning that only fires on LLMs that did well, and changes nothing when acted on, gets ignored);
4. the recalibrated fallback's slope prior ``fallback_slope_sd``: the lowest mean loss (Brier) over every validation
   LLM, each recalibrated on its reference answers (how much of the model's spread this population's answers
   bear out), unless it beats the stated default by less than ``min_loss_gain``;
5. which flags trigger which fallback: the lowest mean loss over the validation LLMs.

Where the validation LLMs cannot decide, the stated default is kept and ``chosen_by_`` says so.
"""
from __future__ import annotations

import itertools
import logging
from typing import Mapping, Sequence

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from assessors.errors import ConfigError, DataError
from assessors.trust.fallbacks import RECALIBRATED_NAME, SLOPE_SDS
from assessors.trust.posterior_policy import PosteriorTrustPolicy, json_safe
from assessors.trust.posterior_report import OK, OPTIONS, OUT, OUT_FLAGS, UNCERTAIN, judge

log = logging.getLogger(__name__)

#: Candidate sets of flags that switch an out-of-population LLM to the fallback (None: any flag).
FLAG_SETS = {"any": None, "misfit_or_ability": ("misfit", "ability_beyond_training"), "misfit": ("misfit",)}


class ValidatedTrustPolicy(BaseEstimator):
    """Verdict thresholds, band widening and fallback chosen on validation LLMs (see the module docstring).

    Parameters
    ----------
    level : float
        Band coverage aimed at.
    band_scales : sequence of float
        Candidate widenings of both bands (1 = the posterior band as it is).
    misfit_alphas, range_margins, max_widths : sequence of float
        Threshold grid (see :func:`~assessors.trust.posterior_report.judge`).
    max_false_alarms : float
        Largest share of flagged validation LLMs that did not fail.
    fallbacks : sequence of str
        Candidate fallbacks (keys of the ``losses`` given to :meth:`fit`).
    slope_sds : sequence of float
        Candidate slope priors of the recalibrated fallback (``losses`` keys ``recalibrated@<sd>``).
    min_failures, min_triggered : int
        Validation failures / triggered validation LLMs needed to choose on them.
    quiet_flags : bool
        Apply the quiet rule (step 3 of the module docstring).
    min_loss_gain : float
        Mean loss gain of a fallback on a flag's validation LLMs that keeps the flag from the quiet rule.
    stated_defaults : mapping
        Used where the validation LLMs cannot decide: ``misfit_alpha``, ``range_margin``,
        ``max_width``, ``fallback_kind``, ``fallback_flags`` (a key of :data:`FLAG_SETS`) and ``fallback_slope_sd``.
    """

    def __init__(self, level: float = 0.9, band_scales: Sequence[float] = (1.0, 1.25, 1.5, 2.0, 2.5, 3.0),
                 misfit_alphas: Sequence[float] = (0.001, 0.01, 0.05), range_margins: Sequence[float] = (0.02, 0.05, 0.1),
                 max_widths: Sequence[float] = (0.15, 0.2, 0.3), max_false_alarms: float = 0.2,
                 fallbacks: Sequence[str] = ("releveled", "reference_only"), slope_sds: Sequence[float] = SLOPE_SDS,
                 min_failures: int = 3, min_triggered: int = 2, quiet_flags: bool = True, min_loss_gain: float = 0.005,
                 stated_defaults: Mapping | None = None):
        self.level = level
        self.band_scales = band_scales
        self.misfit_alphas = misfit_alphas
        self.range_margins = range_margins
        self.max_widths = max_widths
        self.max_false_alarms = max_false_alarms
        self.fallbacks = fallbacks
        self.slope_sds = slope_sds
        self.min_failures = min_failures
        self.min_triggered = min_triggered
        self.quiet_flags = quiet_flags
        self.min_loss_gain = min_loss_gain
        self.stated_defaults = stated_defaults

    def _defaults(self) -> dict:
        """``stated_defaults`` over the report's and the serving policy's own defaults (stated once, there)."""
        serving, flags = PosteriorTrustPolicy(), {v: k for k, v in FLAG_SETS.items()}
        own = {**{k: OPTIONS[k] for k in ("misfit_alpha", "range_margin", "max_width")},
               "fallback_kind": serving.fallback_kind, "fallback_flags": flags[serving.fallback_flags],
               "fallback_slope_sd": serving.fallback_slope_sd}
        unknown = sorted(set(self.stated_defaults or {}) - set(own))
        if unknown:
            raise ConfigError(f"ValidatedTrustPolicy: unknown stated_defaults {unknown}; allowed: {sorted(own)}")
        return {**own, **dict(self.stated_defaults or {})}

    def fit(self, reports, realised_accuracy, auc_latent, auc_reference, losses: Mapping[str, np.ndarray]):
        """Choose on the validation LLMs.

        Parameters
        ----------
        reports : sequence of PosteriorTrust, length k
            Each validation LLM's report about the validation prompts.
        realised_accuracy, auc_latent, auc_reference : ndarray of shape (k,)
            What happened on the validation prompts (latent and reference-only AUC; NaN if undefined).
        losses : mapping str -> ndarray of shape (k,)
            Per-LLM loss (lower is better) of ``latent`` (no fallback), each candidate fallback and
            ``recalibrated@<sd>`` for each of ``slope_sds``.
        """
        acc, a_lat, a_ref = (np.asarray(v, dtype=np.float64) for v in (realised_accuracy, auc_latent, auc_reference))
        if not (len(reports) == len(acc) == len(a_lat) == len(a_ref)) or "latent" not in losses:
            raise DataError(f"ValidatedTrustPolicy.fit: {len(reports)} reports, {len(acc)}/{len(a_lat)}/{len(a_ref)} "
                            f"outcomes, losses {sorted(losses)} (needs 'latent')")
        d = self._defaults()
        losses = {k: np.asarray(v, dtype=np.float64) for k, v in losses.items()}
        self.n_val_, self.chosen_by_, self.muted_flags_ = len(reports), {}, ()
        self._fit_bands(reports, acc, a_lat)
        ranking_failed = np.nan_to_num(a_lat, nan=1.0) < np.nan_to_num(a_ref, nan=0.0)
        fail = self._fit_thresholds(reports, acc, ranking_failed, d)
        losses = self._fit_slope(losses, d)
        if self.quiet_flags:
            self._fit_quiet(reports, fail, losses)
        self._fit_fallback(reports, losses, d)
        log.info("validated trust policy: %s (%s)", self.options(), self.chosen_by_)
        return self

    def _fit_bands(self, reports, acc, a_lat) -> None:
        """``band_scale_`` and ``auc_band_scale_`` (step 1) and their ``coverage_``."""
        def coverage(scale, auc: bool):
            judged = (judge(r, band_scale=scale, auc_band_scale=scale) for r in reports)
            bands = [j.auc_band if auc else j.accuracy_band for j in judged]
            hits = [lo <= v <= hi for (lo, hi), v in zip(bands, a_lat if auc else acc) if np.isfinite(v) and np.isfinite(lo)]
            return (float(np.mean(hits)) if hits else np.nan), len(hits)

        for name, auc in (("band_scale", False), ("auc_band_scale", True)):
            cov = {s: coverage(s, auc) for s in self.band_scales}
            ok = [s for s, (c, n) in cov.items() if n and c >= self.level]
            n = max(n for _, n in cov.values())
            scale, self.chosen_by_[name] = (
                (1.0, "default 1.0 (no validation LLM with a finite value)") if not n else
                (min(ok), f"smallest with coverage >= {self.level} on {n} validation LLMs") if ok else
                (max(self.band_scales), f"largest of the grid (none reached {self.level} on {n} validation LLMs)"))
            setattr(self, f"{name}_", float(scale))
        self.coverage_ = {"accuracy": coverage(self.band_scale_, False)[0], "auc": coverage(self.auc_band_scale_, True)[0]}

    def _judged(self, reports, **thr) -> list:
        """``reports`` re-judged under the chosen bands and muted flags and the thresholds ``thr``."""
        return [judge(r, band_scale=self.band_scale_, auc_band_scale=self.auc_band_scale_,
                      muted_flags=self.muted_flags_, **thr) for r in reports]

    def _fit_thresholds(self, reports, acc, ranking_failed, d) -> np.ndarray:
        """Choose ``thresholds_``; returns which validation LLMs failed (k,)."""
        base = self._judged(reports)
        fail = ranking_failed | np.array([not (b.accuracy_band[0] <= a <= b.accuracy_band[1]) for b, a in zip(base, acc)])
        self.n_failures_ = int(fail.sum())
        keys = ("misfit_alpha", "range_margin", "max_width")
        if self.n_failures_ < self.min_failures:
            self.thresholds_ = {k: float(d[k]) for k in keys}
            self.chosen_by_["thresholds"] = (f"default ({self.n_failures_} failures among {len(reports)} validation "
                                             f"LLMs < {self.min_failures})")
            return fail
        best = None
        for combo in itertools.product(self.misfit_alphas, self.range_margins, self.max_widths):
            thr = dict(zip(keys, map(float, combo)))
            flagged = np.array([j.verdict != OK for j in self._judged(reports, **thr)])
            # recall of failures (NaN without failures), false-alarm share of the flagged LLMs
            rec = float(flagged[fail].mean()) if fail.any() else np.nan
            fa = float((~fail[flagged]).mean()) if flagged.any() else 0.0
            feasible = fa <= self.max_false_alarms
            score = (feasible, rec if feasible else rec - fa, -flagged.sum())
            if best is None or score > best[0]:
                best = (score, thr, rec, fa)
        _, self.thresholds_, rec, fa = best
        self.chosen_by_["thresholds"] = (f"best recall ({rec:.2f}, false alarms {fa:.2f}) of {self.n_failures_} failures "
                                         f"among {len(reports)} validation LLMs")
        return fail

    def _fit_quiet(self, reports, fail: np.ndarray, losses) -> None:
        """The quiet rule: mute the flags, and widen ``max_width``, that only raised false alarms."""
        judged = self._judged(reports, **self.thresholds_)
        quiet = []
        for flag in OUT_FLAGS:
            on = np.array([flag in j.flags for j in judged])
            if on.sum() < self.min_triggered or (on & fail).any():
                continue
            gain = max(float(np.nanmean(losses["latent"][on] - losses[fb][on])) for fb in self.fallbacks)
            if not gain >= self.min_loss_gain:
                quiet.append(flag)
        self.muted_flags_ = tuple(quiet)
        if quiet:
            self.chosen_by_["muted_flags"] = (f"raised on >= {self.min_triggered} of {len(reports)} validation LLMs, "
                                              f"none of them a failure, no fallback gain >= {self.min_loss_gain}")

        def uncertain(width):
            thr = {**self.thresholds_, "max_width": width}
            return np.array([j.verdict == UNCERTAIN for j in self._judged(reports, **thr)])

        width = self.thresholds_["max_width"]
        if (uncertain(width) & fail).any():
            return
        for w in sorted(w for w in self.max_widths if w >= width):
            width = float(w)
            if uncertain(width).sum() < self.min_triggered:
                break
        if width != self.thresholds_["max_width"]:
            self.chosen_by_["max_width"] = (f"raised from {self.thresholds_['max_width']}: its 'uncertain' verdicts fell "
                                            f"on >= {self.min_triggered} validation LLMs, none of them a failure")
            self.thresholds_ = {**self.thresholds_, "max_width": width}

    def _fit_slope(self, losses, d) -> dict:
        """``fallback_slope_sd_`` (step 4); returns ``losses`` with ``recalibrated`` the loss under it."""
        key = lambda sd: f"{RECALIBRATED_NAME}@{float(sd):g}"  # noqa: E731
        sds = list(dict.fromkeys(float(v) for v in (d["fallback_slope_sd"], *self.slope_sds)))
        missing = [key(v) for v in sds if key(v) not in losses]
        if missing:
            raise DataError(f"ValidatedTrustPolicy.fit: no losses {missing}; score the validation LLMs with "
                            f"llm_outcome(..., slope_sds=...) covering slope_sds and stated_defaults.fallback_slope_sd")
        loss = {v: losses[key(v)] for v in sds}
        mean = {v: float(np.nanmean(x)) if np.isfinite(x).any() else np.inf for v, x in loss.items()}
        self.slope_losses_ = {key(v): m for v, m in mean.items()}
        n, best = int(np.isfinite(loss[sds[0]]).sum()), min(sds, key=mean.get)
        self.fallback_slope_sd_, self.chosen_by_["slope_sd"] = best, f"lowest mean loss over {n} validation LLMs"
        if n < self.min_triggered or not mean[sds[0]] - mean[best] >= self.min_loss_gain:
            self.fallback_slope_sd_ = sds[0]  # too few LLMs, or no prior lowers their loss by min_loss_gain: the cautious default
            self.chosen_by_["slope_sd"] = f"default (on {n} validation LLMs no prior lowers the mean loss by {self.min_loss_gain})"
        return {**losses, RECALIBRATED_NAME: loss[self.fallback_slope_sd_]}

    def _fit_fallback(self, reports, losses, d) -> None:
        judged = self._judged(reports, **self.thresholds_)
        out = np.array([j.verdict == OUT for j in judged])
        trig = {name: out & np.array([fs is None or any(f in j.flags for f in fs) for j in judged])
                for name, fs in FLAG_SETS.items()}
        self.n_triggered_ = int(trig["any"].sum())
        table = {(fs, fb): float(np.nanmean(np.where(on, losses[fb], losses["latent"])))
                 for (fs, on), fb in itertools.product(trig.items(), self.fallbacks)}
        self.losses_ = {f"{fs}/{fb}": v for (fs, fb), v in table.items()}
        if self.n_triggered_ < self.min_triggered:
            self.fallback_kind_, self.fallback_flags_ = d["fallback_kind"], d["fallback_flags"]
            self.chosen_by_["fallback"] = (f"default ({self.n_triggered_} validation LLMs out of population "
                                           f"< {self.min_triggered})")
            return
        # ties (e.g. no LLM triggered by the narrower sets) keep the default first
        order = sorted(table, key=lambda k: (table[k], k != (d["fallback_flags"], d["fallback_kind"])))
        self.fallback_flags_, self.fallback_kind_ = order[0]
        self.chosen_by_["fallback"] = f"lowest mean loss over {self.n_val_} validation LLMs ({self.n_triggered_} triggered)"

    def options(self) -> dict:
        """Keyword arguments of :class:`~assessors.trust.posterior_policy.PosteriorTrustPolicy`."""
        check_is_fitted(self, "fallback_kind_")
        fs = FLAG_SETS[self.fallback_flags_]
        return {**self.thresholds_, "band_scale": self.band_scale_, "auc_band_scale": self.auc_band_scale_,
                "muted_flags": list(self.muted_flags_), "fallback_kind": self.fallback_kind_,
                "fallback_flags": None if fs is None else list(fs), "fallback_slope_sd": self.fallback_slope_sd_}

    def record(self) -> dict:
        """What ``train.py`` stores with the model (``AssessorModel.trust_policy``; JSON-safe): ``source``, ``options``,
        ``chosen_by``, ``n_validation_llms`` and the validation counts, band coverage and slope priors' losses behind
        the choice."""
        check_is_fitted(self, "fallback_kind_")
        return json_safe({"source": f"validated on {self.n_val_} validation LLMs", "options": self.options(),
                          "chosen_by": self.chosen_by_, "n_validation_llms": self.n_val_,
                          "n_failures": self.n_failures_, "n_out_of_population": self.n_triggered_,
                          "coverage": self.coverage_, "slope_losses": self.slope_losses_})
