"""Adaptive onboarding over a candidate pool of prompt files, for LLMs kept in an LLM registry.

The server's counterpart of ``predict.py mode=onboard`` (:mod:`assessors.onboarding.adaptive_run`):
the candidate pool is read from prompt files (the formats ``onboard.prompts`` takes) and featurized
once; :meth:`PoolOnboarding.next` proposes the unanswered pool prompts that teach the most about
the LLM, and the answers describe the LLM as :class:`~assessors.core.evidence.Evidence` (graded
answers on any prompts), so the registry computes its posterior, predictions and trust report.

An LLM's evidence may also hold answers on the model's reference prompts (their features ship with
the model) and items posted through ``POST /v1/llms``: they all enter its posterior; selection
counts the answered pool prompts, in the order they were posted, so asking twice without answering
returns the same prompts and a resumed sequence continues from the answered items.
"""
from __future__ import annotations

import logging
from typing import Mapping, Sequence

import numpy as np

from assessors.core.evidence import Evidence
from assessors.errors import ConfigError, DataError
from assessors.onboarding.reference_set import selector_status

log = logging.getLogger(__name__)


class PoolOnboarding:
    """Next prompts from a candidate pool and the stopping rule, for LLMs described by evidence.

    Parameters
    ----------
    assessor : LatentAssessor
        Fitted; needs ``posterior`` and ``reference_features_``.
    ids : sequence of str, length n_pool
        Pool instance ids.
    texts : sequence of str, length n_pool
        Pool prompts (what the client asks).
    X_pool : ndarray of shape (n_pool, d)
        Their features (the model's featurizer).
    reference_ids : sequence of str, length n_ref
        The model's reference ids: answers on them are accepted (features ``reference_features_``).
    selector_params : dict
        :class:`AdaptiveSelector` parameters (criterion, strata, budget, stop_width, ...).
    source : str
        Where the pool came from (logged, and shown by ``/health``).
    """

    def __init__(self, assessor, ids: Sequence[str], texts: Sequence[str], X_pool: np.ndarray,
                 reference_ids: Sequence[str] = (), selector_params: dict | None = None, source: str = ""):
        from assessors.onboarding.adaptive import AdaptiveSelector

        assessor.require_posterior("adaptive onboarding over a candidate pool")
        self.assessor = assessor
        self.source = source
        self.ids = [str(i) for i in ids]
        self.texts = dict(zip(self.ids, map(str, texts)))
        self.pos = {k: i for i, k in enumerate(self.ids)}
        self.X_pool = np.asarray(X_pool, dtype=np.float32)
        self.ref_pos = {str(k): i for i, k in enumerate(reference_ids)}
        params = dict(selector_params or {})
        params.setdefault("strata", min(20, len(self.ids) // 5))
        self.selector = AdaptiveSelector(**params).fit(assessor, self.X_pool)

    # ------------------------------------------------------------------ evidence
    def features(self, ids: Sequence[str], known: Mapping[str, np.ndarray] | None = None,
                 what: str = "answers") -> np.ndarray:
        """Features (n, d) of pool ids, reference ids or ids in ``known``; unknown ids are a
        :class:`DataError` naming them."""
        known = known or {}
        unknown = [i for i in ids if i not in self.pos and i not in known and i not in self.ref_pos]
        if unknown:
            raise DataError(f"{what}: {len(unknown)} id(s) are neither candidate pool ids (server.onboarding.pool) "
                            f"nor reference ids of this assessor, e.g. {unknown[:3]} (POST /v1/llms/{{name}}/next "
                            f"proposes pool ids, e.g. {self.ids[:2]})")
        ref = self.assessor.reference_features_
        rows = [self.X_pool[self.pos[i]] if i in self.pos else
                known[i] if i in known else np.asarray(ref[self.ref_pos[i]], np.float32) for i in ids]
        return np.stack(rows).astype(np.float32) if rows else np.zeros((0, self.X_pool.shape[1]), np.float32)

    def from_reference(self, reference: np.ndarray, order: Sequence[str] = ()) -> Evidence:
        """An LLM's answered reference results as evidence (posting ``order`` first, then reference order)."""
        ids = list(self.ref_pos)
        r = np.asarray(reference, dtype=np.float64)
        answered = [ids[j] for j in np.flatnonzero(np.isfinite(r))]
        done, posted = set(answered), set(order)
        seq = list(dict.fromkeys(i for i in order if i in done)) + [i for i in answered if i not in posted]
        return Evidence(self.features(seq), [r[self.ref_pos[i]] for i in seq], tuple(seq))

    def update(self, evidence: Evidence | None, answers: Mapping[str, float | None]) -> Evidence:
        """``evidence`` with ``answers`` ({id: 0/1, or None to withdraw}) applied: a re-posted id
        moves to the end (posting order), a withdrawn one leaves."""
        old = _items(evidence)
        ids = list(answers)
        if len(set(ids)) != len(ids):
            raise DataError("answers: repeated ids")
        X_new = self.features(ids, {i: x for i, (x, _) in old.items()})
        seq = [(i, *old[i]) for i in old if i not in answers]
        seq += [(i, x, answers[i]) for i, x in zip(ids, X_new) if answers[i] is not None]
        if not seq:
            return Evidence(np.zeros((0, self.X_pool.shape[1]), np.float32), [], ())
        return Evidence(np.stack([x for _, x, _ in seq]), [float(v) for _, _, v in seq], tuple(i for i, _, _ in seq))

    def posterior(self, evidence: Evidence | None):
        """The assessor's posterior from ``evidence`` (the prior without any)."""
        if evidence is None or evidence.n_items == 0:
            return self.selector.posterior([], [])
        return self.assessor.describe(evidence)

    def history(self, evidence: Evidence | None) -> tuple[list[int], list[float]]:
        """Answered pool positions in posting order and their answers."""
        if evidence is None or evidence.ids is None:
            return [], []
        seq = [(self.pos[i], float(v)) for i, v in zip(evidence.ids, evidence.y) if i in self.pos and np.isfinite(v)]
        return [j for j, _ in seq], [v for _, v in seq]

    # ------------------------------------------------------------------ selection
    def status(self, evidence: Evidence | None, post, history: Sequence[dict] = ()) -> dict:
        """Expected accuracy on the pool with its 90% band (``width``), and the stopping rule.

        ``post`` is the posterior of all of ``evidence``; the design estimate and the budget count
        the answered items (the budget all of them, the design estimate the pool's).
        """
        asked, y = self.history(evidence)
        return selector_status(self.selector, post, asked, y, 0 if evidence is None else evidence.n_answered, history)

    def next(self, evidence: Evidence | None, n: int, post, candidates: Sequence[str] | None = None) -> list[str]:
        """Ids of the next ``n`` unanswered pool prompts (fewer when the pool runs out), most
        informative first; ``candidates`` restricts the choice to those pool ids."""
        asked, y = self.history(evidence)
        blocked: list[int] = []
        if candidates is not None:
            unknown = [i for i in candidates if i not in self.pos]
            if unknown:
                raise DataError(f"candidates: {len(unknown)} id(s) are not candidate pool ids "
                                f"(server.onboarding.pool), e.g. {unknown[:3]}")
            allowed, done = {self.pos[i] for i in candidates}, set(asked)
            blocked = [j for j in range(len(self.ids)) if j not in allowed and j not in done]
        free = len(self.ids) - len(asked) - len(blocked)
        if free <= 0:
            return []
        # blocked prompts are passed as asked (so never picked) with the true posterior of the answers
        picks = self.selector.next(asked + blocked, y + [np.nan] * len(blocked), n=min(int(n), free), post=post)
        return [self.ids[j] for j in picks]


def _items(evidence: Evidence | None) -> dict:
    """``{id: (features (d,), answer)}`` of ``evidence`` in its order; items registered without ids
    (``POST /v1/llms`` evidence) are named ``evidence/<k>``."""
    if evidence is None:
        return {}
    ids = evidence.ids if evidence.ids is not None else tuple(f"evidence/{k}" for k in range(evidence.n_items))
    return {i: (x, v) for i, x, v in zip(ids, evidence.X, evidence.y)}


def load_pool(files: Sequence[str], embed, assessor, reference_ids: Sequence[str],
              selector_params: dict | None = None) -> PoolOnboarding:
    """Read the candidate pool ``files`` (CSV/JSONL prompt files, as ``onboard.prompts``), featurize
    it once with ``embed`` (list of str -> (n, d)) and fit the selector on it.

    Raises
    ------
    NoPosteriorError
        The assessor has no posterior (before any file is read).
    DataError
        A file is missing or malformed, an id occurs twice, or no prompt can be featurized.
    """
    from assessors.data.prompts import read_prompt_files

    assessor.require_posterior("server.onboarding.pool (unset it to onboard on the reference set)")
    files = [str(f) for f in files]
    df = read_prompt_files(files, required=())
    if df.empty:
        raise DataError(f"server.onboarding.pool {files}: no prompts")
    return _fit_pool(df, embed, assessor, reference_ids, selector_params,
                     f"server.onboarding.pool ({len(files)} file(s))")


def load_training_pool(record: dict | None, embed, assessor, reference_ids: Sequence[str],
                       selector_params: dict | None = None, data_dir=None, cache_dir=None) -> PoolOnboarding:
    """The model's training prompts as the candidate pool (``server.onboarding.pool: training``): read
    from the data dir (:func:`~assessors.data.training_prompts.read_training_prompts`), featurized once
    with ``embed`` and the selector fitted on them.

    Parameters
    ----------
    record : dict or None
        The model's ``training_prompts`` (prompt files relative to the data dir, training ids).
    data_dir, cache_dir : path, optional
        Where the files are looked up (``paths.data_dir``, else ``$ASSESSORS_DATA_DIR``; then the cache).

    Raises
    ------
    NoPosteriorError
        The assessor has no posterior.
    ConfigError
        The model records no training prompts (or its data has none to grade by).
    DataError
        A prompt file is missing from the data dir, or no prompt can be featurized.
    """
    from assessors.data.training_prompts import no_pool_reason, read_training_prompts

    assessor.require_posterior("server.onboarding.pool=training (unset it to onboard on the reference set)")
    why = no_pool_reason(record)
    if why:
        raise ConfigError(f"server.onboarding.pool=training: this model records no training prompts ({why}); list "
                          "prompt files in server.onboarding.pool instead")
    df, files = read_training_prompts(record, data_dir, cache_dir, required=(),
                                      instead="list prompt files in server.onboarding.pool")
    return _fit_pool(df, embed, assessor, reference_ids, selector_params,
                     f"the model's training prompts ({record.get('data')}), {len(files)} file(s)")


def _fit_pool(df, embed, assessor, reference_ids: Sequence[str], selector_params: dict | None,
              source: str) -> PoolOnboarding:
    """Featurize the pool prompts ``df`` (``instance_id, prompt, ...``) and fit the selector on them."""
    from assessors.onboarding.adaptive_run import featurize_pool

    df, X = featurize_pool(df.set_index("instance_id"), embed, "server.onboarding.pool")
    log.info("candidate pool: %d prompts from %s", len(df), source)
    return PoolOnboarding(assessor, list(df.index), df["prompt"].astype(str).tolist(), X, reference_ids,
                          selector_params, source)
