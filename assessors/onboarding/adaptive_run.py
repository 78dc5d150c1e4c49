"""Adaptive onboarding: ask a new LLM one prompt (or a small batch) at a time until the estimate is good.

:class:`AdaptiveOnboarding` joins an :class:`~assessors.onboarding.adaptive.AdaptiveSelector` (which
prompt next) to an :class:`~assessors.onboarding.client.Onboarder` (the OpenAI-compatible client,
graders and the fsync'ed journal). Each step passes every prompt asked so far plus the next batch to
:meth:`Onboarder.run`, which re-uses journaled answers and queries only the new ones; so a killed
run, started again, replays its journal through the same deterministic selection and continues the
same sequence without re-querying anything.

``<out_dir>/adaptive.json`` pins what the journal belongs to (endpoint model, candidate pool,
assessor, selection settings): a journal from another model or pool is a clear error, never
silently mixed in. It also records the answered sequence, the estimate after each answer and why
the run stopped; ``answers.csv`` holds ``order, instance_id, success``.
"""
from __future__ import annotations

import copy
import json
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from assessors.data.evidence_files import ANSWERS_FILE, ONBOARD_MANIFEST as MANIFEST, pool_fingerprint
from assessors.errors import DataError, OfflineError
from assessors.io import atomic_write
from assessors.onboarding.client import check_prompts
from assessors.secrets import redact_text

log = logging.getLogger(__name__)


class AdaptiveOnboarding:
    """Onboard a new LLM with adaptively chosen prompts from a candidate pool.

    Parameters
    ----------
    onboarder : Onboarder
        Endpoint client, graders and journal (its ``show_progress`` is replaced by one bar here).
    selector : AdaptiveSelector
        Unfitted; fitted here on the pool.
    assessor : LatentAssessor
        The fitted latent assessor.
    featurizer : Featurizer
        The model's fitted featurizer (prompt text -> features).
    assessor_id : str
        Identity of the assessor (e.g. the model URI or a hash of its reference ids), pinned in the manifest.
    max_failed_batches : int
        Consecutive batches without a single answer before the run stops with :class:`OfflineError`.

    Attributes
    ----------
    selector_ : AdaptiveSelector
        Fitted on the pool (after :meth:`run`).
    asked_ : ndarray of shape (n_asked,)
        Pool positions asked, in order.
    answers_ : ndarray of shape (n_asked,)
        Their graded answers (NaN where the endpoint failed).
    """

    def __init__(self, onboarder, selector, assessor, featurizer, assessor_id: str = "", max_failed_batches: int = 3):
        self.onboarder = onboarder
        self.selector = selector
        self.assessor = assessor
        self.featurizer = featurizer
        self.assessor_id = assessor_id
        self.max_failed_batches = max_failed_batches

    def _features(self, df: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray]:
        """Pool rows the featurizer can embed and their features (see :func:`featurize_pool`)."""
        return featurize_pool(df, self.featurizer.transform, type(self.featurizer).__name__)

    def _manifest(self, out: Path, df: pd.DataFrame) -> dict:
        ob = self.onboarder
        pinned = {"model": ob.model, "llm": ob.llm_name or ob.model,
                  "pool": pool_fingerprint(df), "n_pool": int(len(df)), "assessor": str(self.assessor_id),
                  "selector": {k: v for k, v in self.selector.get_params().items()
                               if k not in ("budget", "stop_width", "stop_delta", "stop_patience", "min_questions")}}
        path = out / MANIFEST
        if path.exists():
            try:
                old = json.loads(path.read_text())["pinned"]
            except (json.JSONDecodeError, KeyError, TypeError) as e:
                raise DataError(f"{path}: not an adaptive onboarding manifest ({e}); use a new onboard.out_dir") from e
            diff = {k: (old.get(k), v) for k, v in pinned.items() if old.get(k) != v}
            if diff:
                what = "; ".join(f"{k}: journal has {a!r}, this run {b!r}" for k, (a, b) in diff.items())
                raise DataError(f"{out}: this journal belongs to another onboarding ({what}). Its answers are kept; "
                                f"use a new onboard.out_dir, or rerun with the journal's settings to resume it")
        elif (out / "journal.jsonl").exists():
            raise DataError(f"{out}: holds a journal without {MANIFEST} (a fixed reference-set onboarding?); "
                            "use a new onboard.out_dir for adaptive onboarding")
        return pinned

    def run(self, pool: pd.DataFrame, out_dir: str | os.PathLike, X_target: np.ndarray | None = None,
            http_client=None, pool_files: list[str] | None = None, record_pool_ids: bool = False) -> dict:
        """Ask, grade and journal adaptively chosen prompts until the selector's stopping rule holds.

        Parameters
        ----------
        pool : pandas.DataFrame
            Candidate prompts: ``instance_id``, ``prompt``, ``target``, ``subgroup`` (as for
            :meth:`Onboarder.run`).
        out_dir : path
            ``journal.jsonl``, ``results/``, ``summary.json`` (the onboarder's), ``answers.csv`` and
            ``adaptive.json``.
        X_target : ndarray of shape (n_target, d), optional
            Features of the prompts whose expected accuracy is reported (default: the pool).
        pool_files : list of str, optional
            The files ``pool`` was read from, recorded in ``adaptive.json`` (``pool_files``) so that
            ``predict.py`` can score the LLM from this directory (``llms=[{name, onboarded: <out_dir>}]``).
        record_pool_ids : bool
            The pool is a part of ``pool_files`` (e.g. the model's training prompts): its ids are
            recorded too (``pool_ids``), so that the pool read back from the files is this one.

        Returns
        -------
        dict
            Questions asked and answered, stop reason, the expected accuracy with its 90% band,
            and the onboarder's token and time totals.
        """
        df = check_prompts(pool, "candidate pool")
        ob = copy.copy(self.onboarder)
        ob.show_progress = False
        for sg in df["subgroup"].unique():  # fail before spending any request
            ob.graders.for_subgroup(sg)
        df, X_pool = self._features(df)
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        pinned = self._manifest(out, df)
        sel = self.selector.fit(self.assessor, X_pool, X_target)
        state = {"pinned": pinned, "pool_files": [str(Path(f).resolve()) for f in pool_files or ()],
                 **({"pool_ids": [str(i) for i in df.index]} if record_pool_ids else {}),
                 "sequence": [], "history": [], "stop_reason": None}
        self._write(out, state)
        prog = _Progress()
        t0 = time.perf_counter()
        bar = tqdm(total=int(sel.budget), desc=f"adaptive onboarding {pinned['llm']}", unit="q",
                   disable=not self.onboarder.show_progress)
        try:
            reason = self._ask_until_stop(sel, ob, df, out, prog, state, bar, http_client)
        finally:
            bar.close()
        state["stop_reason"] = reason
        self._write(out, state)
        self.selector_, self.asked_, self.answers_ = (sel, np.asarray(prog.asked, dtype=int),
                                                      np.asarray(prog.answers, dtype=float))
        return self._finish(sel, df, out, pinned["llm"], prog, reason, t0)

    def _ask_until_stop(self, sel, ob, df: pd.DataFrame, out: Path, prog: "_Progress", state: dict, bar,
                        http_client) -> str:
        """Ask batch after batch, updating the estimate and the manifest, until the selector stops
        or the pool runs out; returns why it stopped."""
        while True:
            n_ok = prog.n_answered
            stop, reason = sel.should_stop(n_ok, prog.history)
            if stop:
                return reason
            batch = sel.next(prog.asked, prog.answers, n=min(int(sel.batch_size), int(sel.budget) - n_ok))
            if len(batch) == 0:
                return "candidate pool exhausted"
            new = self._ask_batch(ob, df, batch, prog, out, http_client)
            prog.asked += batch.tolist()
            prog.answers += new
            self._count_failure(new, prog, ob.base_url, out, n_ok)
            est = sel.estimate(sel.posterior(prog.asked, prog.answers), asked=prog.asked, answers=prog.answers)
            est["n"] = int(np.isfinite(prog.answers).sum())
            prog.history.append(est)
            state.update(sequence=[[df.index[j], None if not np.isfinite(v) else v]
                                   for j, v in zip(prog.asked, prog.answers)], history=prog.history)
            self._write(out, state)
            bar.update(int(np.isfinite(new).sum()))

    @staticmethod
    def _ask_batch(ob, df: pd.DataFrame, batch: np.ndarray, prog: "_Progress", out: Path, http_client) -> list[float]:
        """Success of each prompt in ``batch`` (NaN when unanswered), through the journaling onboarder.

        Every prompt asked so far goes along: the onboarder answers those from its journal.
        """
        ids = [df.index[j] for j in prog.asked + batch.tolist()]
        try:
            results, prog.summary = ob.run(df.loc[ids].reset_index(), out, http_client=http_client)
            prog.n_queried += prog.summary["n_queried"]
        except OfflineError:
            if not prog.asked:
                raise
            return [np.nan] * len(batch)
        row = dict(zip(results.instance_ids, results.success[0]))
        return [float(row.get(df.index[j], np.nan)) for j in batch]

    def _count_failure(self, new: list[float], prog: "_Progress", base_url: str, out: Path, n_ok: int) -> None:
        """Reset the count of unanswered batches on any answer; stop after ``max_failed_batches``."""
        if np.isfinite(new).any():
            prog.failed = 0
            return
        prog.failed += 1
        if prog.failed >= int(self.max_failed_batches):
            raise OfflineError(
                f"{redact_text(base_url)}: {prog.failed} batches in a row got no answer (see {out / 'journal.jsonl'} "
                f"for the errors); the {n_ok} answers so far are journaled, rerun to resume")

    @staticmethod
    def _finish(sel, df: pd.DataFrame, out: Path, llm: str, prog: "_Progress", reason: str, t0: float) -> dict:
        """Write ``answers.csv`` and return the run's summary (see :meth:`run`)."""
        asked, answers, summary = prog.asked, prog.answers, prog.summary
        seq = pd.DataFrame({"order": np.arange(len(asked)), "instance_id": [df.index[j] for j in asked],
                            "success": answers})
        atomic_write(out / ANSWERS_FILE, lambda tmp: seq.to_csv(tmp, index=False))
        last = prog.history[-1] if prog.history else sel.estimate(sel.posterior([], []))
        log.info("adaptive onboarding of %s stopped after %d questions: %s", llm, len(asked), reason)
        return {"llm": llm, "n_asked": len(asked), "n_answered": prog.n_answered,
                "stop_reason": reason, "expected_accuracy": last["accuracy"],
                "expected_accuracy_band_90": [last["low"], last["high"]],
                "estimator": sel.estimator,
                **{k: last.get(k) for k in ("model_accuracy", "model_low", "model_high", "design_accuracy",
                                            "design_low", "design_high", "n_random", "composite_accuracy",
                                            "composite_low", "composite_high")},
                "answered_accuracy": float(np.nanmean(answers)) if np.isfinite(answers).any() else None,
                "seconds": round(time.perf_counter() - t0, 3), "answers": str(out / ANSWERS_FILE),
                "manifest": str(out / MANIFEST),
                "n_queried": prog.n_queried,
                **{k: summary.get(k) for k in ("prompt_tokens", "completion_tokens", "total_tokens", "mean_latency_s")}}

    @staticmethod
    def _write(out: Path, state: dict) -> None:
        atomic_write(out / MANIFEST, lambda tmp: Path(tmp).write_text(json.dumps(state, indent=1, default=float)))


def featurize_pool(df: pd.DataFrame, transform, what: str = "the model's featurizer") -> tuple[pd.DataFrame, np.ndarray]:
    """Rows of a candidate pool the featurizer can embed and their features.

    Parameters
    ----------
    df : pandas.DataFrame of shape (n, ...)
        Indexed by instance id, with a ``prompt`` column.
    transform : callable
        ``list of str -> features (n, d)`` (the model's featurizer, or the server's cached embedding).
    what : str
        The featurizer's name, for the error.

    Returns
    -------
    (pandas.DataFrame of shape (n_ok, ...), ndarray of shape (n_ok, d))
        Rows whose features are all finite; the others are left out with a warning naming them.

    Raises
    ------
    DataError
        When no prompt of the pool can be featurized.
    """
    X = np.asarray(transform(df["prompt"].astype(str).tolist()), dtype=np.float32)
    ok = np.isfinite(X).all(1)
    if not ok.any():
        raise DataError(f"candidate pool: none of its {len(df)} prompts can be featurized by the model's "
                        f"featurizer ({what}); pass prompts in the model's input format")
    if not ok.all():
        log.warning("candidate pool: %d prompts cannot be featurized and are left out (e.g. %s)",
                    int((~ok).sum()), list(df.index[~ok][:3]))
    return df[ok], X[ok]


@dataclass
class _Progress:
    """What one adaptive run has asked so far: pool positions and their success (NaN: no answer),
    the estimate after each batch, unanswered batches in a row, and the onboarder's last summary."""

    asked: list[int] = field(default_factory=list)
    answers: list[float] = field(default_factory=list)
    history: list[dict] = field(default_factory=list)
    failed: int = 0
    n_queried: int = 0
    summary: dict = field(default_factory=dict)

    @property
    def n_answered(self) -> int:
        return int(np.isfinite(self.answers).sum()) if self.answers else 0
