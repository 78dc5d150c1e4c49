"""Onboard a new LLM: send reference prompts to an OpenAI-compatible chat endpoint.

:class:`Onboarder` queries ``/v1/chat/completions`` through the ``openai`` client (sync
client, thread pool of ``concurrency`` workers; retries/backoff and timeouts are the
client's own), grades each answer with the grader configured for its subgroup, and appends
one durable record per item to ``<out_dir>/journal.jsonl``. A rerun skips every item whose
record matches the current request (same model, prompt and sampling settings), so an
interrupted onboarding resumes without re-querying finished items.

Outputs in ``out_dir``: ``journal.jsonl``, ``results/`` (:class:`Results` as Parquet, one
LLM row with success, confidence and, if prices are given, cost) and ``summary.json``.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from assessors.data.columns import require_columns
from assessors.data.costs import request_cost
from assessors.data.names import check_unique
from assessors.data.prompts import empty_prompts
from assessors.data.results import Results
from assessors.errors import ConfigError, DataError, OfflineError
from assessors.io import atomic_write
from assessors.onboarding.confidence import item_confidence
from assessors.onboarding.grader_map import GraderMap
from assessors.onboarding.journal import Journal
from assessors.secrets import redact_text

log = logging.getLogger(__name__)
REQUIRED = ("prompt", "target", "subgroup")


def check_prompts(prompts: pd.DataFrame, source: str = "prompts") -> pd.DataFrame:
    """Validate and index a prompts frame by str ``instance_id`` (column or index)."""
    df = prompts.copy()
    if "instance_id" in df.columns:
        df = df.set_index("instance_id")
    elif df.index.name != "instance_id":
        raise DataError(f"{source}: needs an 'instance_id' column or index (have columns {list(df.columns)})")
    df.index = df.index.astype(str)
    require_columns(df, REQUIRED, source)
    bad = empty_prompts(df["prompt"])
    if bad.any():
        raise DataError(f"{source}: empty prompt for instance_id {df.index[bad][0]!r} "
                        f"(row {int(np.flatnonzero(bad)[0])})")
    check_unique(df.index, source, "instance_id")
    return df


class Onboarder:
    """Run reference prompts through a chat-completions endpoint and grade them.

    Parameters
    ----------
    base_url : str
        Endpoint root, e.g. ``http://127.0.0.1:8080/v1``.
    model : str
        Model name sent in each request.
    graders : GraderMap
        Subgroup -> grader.
    api_key_env : str, optional
        Name of the environment variable holding the API key (the key is never logged or
        stored); None sends a placeholder, as local servers expect.
    llm_name : str, optional
        Row name in the returned :class:`Results` (default ``model``).
    temperature, max_tokens, seed : sampling settings (temperature 0: greedy).
    concurrency : int
        Parallel requests.
    max_retries, timeout : int, float
        Passed to the ``openai`` client (exponential backoff on 408/409/429/5xx and
        connection errors; per-request timeout in seconds).
    logprobs : bool
        Request token logprobs (needed for confidences).
    top_logprobs : int
        Alternatives per token; at least the largest label set for label confidences.
    system_prompt : str, optional
        System message; a ``system_prompt`` column in the prompts overrides it per item.
    price_per_1k_prompt, price_per_1k_completion : float, optional
        Token prices; when given, per-item cost is stored in ``Results.cost``.
    extra_body : dict, optional
        Extra JSON fields for the request (server-specific options).
    show_progress : bool
        tqdm progress bar.
    """

    def __init__(self, base_url: str, model: str, graders: GraderMap, api_key_env: str | None = None,
                 llm_name: str | None = None, temperature: float = 0.0, max_tokens: int = 32,
                 seed: int | None = None, concurrency: int = 2, max_retries: int = 3, timeout: float = 120.0,
                 logprobs: bool = True, top_logprobs: int = 10, system_prompt: str | None = None,
                 price_per_1k_prompt: float | None = None, price_per_1k_completion: float | None = None,
                 extra_body: dict | None = None, show_progress: bool = True):
        self.base_url = base_url
        self.model = model
        self.graders = graders
        self.api_key_env = api_key_env
        self.llm_name = llm_name
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.seed = seed
        self.concurrency = concurrency
        self.max_retries = max_retries
        self.timeout = timeout
        self.logprobs = logprobs
        self.top_logprobs = top_logprobs
        self.system_prompt = system_prompt
        self.price_per_1k_prompt = price_per_1k_prompt
        self.price_per_1k_completion = price_per_1k_completion
        self.extra_body = extra_body
        self.show_progress = show_progress

    # ------------------------------------------------------------ requests
    def _client(self, http_client=None):
        import openai

        key = "sk-no-key-required"
        if self.api_key_env:
            key = os.environ.get(self.api_key_env)
            if not key:
                raise ConfigError(f"onboarding.api_key_env={self.api_key_env!r}: environment variable is not set")
        return openai.OpenAI(base_url=self.base_url, api_key=key, max_retries=int(self.max_retries),
                             timeout=float(self.timeout), http_client=http_client)

    def _messages(self, row: pd.Series) -> list[dict]:
        system = row.get("system_prompt") if "system_prompt" in row.index else None
        system = system if isinstance(system, str) and system else self.system_prompt
        msgs = [{"role": "system", "content": system}] if system else []
        # few-shot demonstrations go in as earlier chat turns, so graders still parse only the
        # item's own prompt, and a local server reuses the shared prefix across items
        for shot_prompt, shot_answer in _shots(row.get("shots") if "shots" in row.index else None):
            msgs += [{"role": "user", "content": shot_prompt}, {"role": "assistant", "content": shot_answer}]
        return msgs + [{"role": "user", "content": str(row["prompt"])}]

    def _key(self, messages: list[dict]) -> str:
        """Identity of a request: a journal record is reused only if this matches."""
        blob = json.dumps([self.model, messages, self.temperature, self.max_tokens, self.seed,
                           bool(self.logprobs), self.top_logprobs if self.logprobs else None], sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def _query(self, client, iid: str, messages: list[dict], key: str) -> dict:
        import openai

        kwargs = dict(model=self.model, messages=messages, temperature=self.temperature, max_tokens=self.max_tokens)
        if self.seed is not None:
            kwargs["seed"] = self.seed
        if self.logprobs:
            kwargs.update(logprobs=True, top_logprobs=int(self.top_logprobs))
        if self.extra_body:
            kwargs["extra_body"] = dict(self.extra_body)
        t0 = time.perf_counter()
        try:
            resp = client.chat.completions.create(**kwargs)
        except (openai.AuthenticationError, openai.PermissionDeniedError, openai.NotFoundError):
            raise  # every item would fail the same way: stop the run
        except openai.OpenAIError as e:
            return {"instance_id": iid, "key": key, "error": f"{type(e).__name__}: {e}"[:500],
                    "latency_s": time.perf_counter() - t0}
        latency = time.perf_counter() - t0
        ch = resp.choices[0]
        tokens = None
        content = getattr(ch.logprobs, "content", None) if ch.logprobs is not None else None
        if content:
            tokens = [[t.token, t.logprob, {a.token: a.logprob for a in (t.top_logprobs or [])}] for t in content]
        usage = resp.usage
        return {"instance_id": iid, "key": key, "model": resp.model or self.model,
                "answer": ch.message.content or "", "finish_reason": ch.finish_reason,
                "prompt_tokens": getattr(usage, "prompt_tokens", None),
                "completion_tokens": getattr(usage, "completion_tokens", None),
                "latency_s": latency, "tokens": tokens, "error": None, "time": time.time()}

    # ------------------------------------------------------------- grading
    def _grade(self, rec: dict, row: pd.Series) -> tuple[float, float | None, str | None]:
        grader = self.graders.for_subgroup(row["subgroup"])
        prompt, answer = str(row["prompt"]), rec.get("answer")
        try:
            ok = grader.grade(answer, row["target"], prompt=prompt)
        except DataError as e:
            raise DataError(f"instance {rec['instance_id']!r} (subgroup {row['subgroup']!r}): {e}") from e
        tokens = [tuple(t) for t in rec["tokens"]] if rec.get("tokens") else None
        conf, kind = item_confidence(tokens, grader.choice(answer, prompt=prompt))
        return float(ok), conf, kind

    # ----------------------------------------------------------------- run
    def run(self, prompts: pd.DataFrame, out_dir: str | os.PathLike, http_client=None,
            on_item: Callable[[dict], None] | None = None) -> tuple[Results, dict]:
        """Query, grade and journal every prompt not yet answered; return results.

        Parameters
        ----------
        prompts : pandas.DataFrame
            Columns ``instance_id`` (or index), ``prompt``, ``target``, ``subgroup``
            (optional ``system_prompt``; optional ``shots``: a list, or JSON string, of
            ``[prompt, answer]`` demonstrations sent as earlier chat turns).
        out_dir : path
            Directory for ``journal.jsonl``, ``results/`` and ``summary.json``.
        http_client : httpx.Client, optional
            Custom transport for the openai client (proxies, tests).
        on_item : callable, optional
            Called with each journal record after it is written.

        Returns
        -------
        results : Results
            One LLM row: success (NaN for items that failed), confidence, cost.
        summary : dict
            Item counts, accuracy, token totals, seconds, confidence kinds.
        """
        df = check_prompts(prompts)
        for sg in df["subgroup"].unique():  # fail before spending any request
            self.graders.for_subgroup(sg)
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        journal = Journal(out / "journal.jsonl")
        done = journal.load()
        msgs = {iid: self._messages(row) for iid, row in df.iterrows()}
        keys = {iid: self._key(m) for iid, m in msgs.items()}
        finished, todo = self._resume(df, done, keys)
        log.info("onboarding %s at %s: %d items, %d already in %s", self.model, self.base_url,
                 len(df), len(finished), journal.path)
        client = self._client(http_client) if todo else None
        t0 = time.perf_counter()
        n_queried, n_err = self._query_all(client, df, todo, msgs, keys, journal, done, len(finished), on_item)
        seconds = time.perf_counter() - t0
        results, summary = self._collect(df, done, keys)
        summary.update(n_queried=n_queried, n_resumed=len(finished), n_request_errors=n_err,
                       seconds=round(seconds, 3), journal=str(journal.path))
        if summary["n_answered"] == 0:
            first = next((r["error"] for r in done.values() if r.get("error")), "no answers")
            raise OfflineError(f"onboarding got no answers from {redact_text(self.base_url)} (first error: {first})")
        results.meta["onboarding"] = summary
        results.to_parquet(out / "results")
        atomic_write(out / "summary.json", lambda tmp: Path(tmp).write_text(json.dumps(summary, indent=2)))
        return results, summary

    @staticmethod
    def _resume(df: pd.DataFrame, done: dict, keys: dict) -> tuple[set, list]:
        """Items whose journal record answers the current request, and the items still to query."""
        finished = {i for i, r in done.items() if i in keys and r.get("key") == keys[i] and not r.get("error")}
        todo = [i for i in df.index if i not in finished]
        stale = sum(1 for i in todo if i in done and not done[i].get("error"))
        if stale:
            log.warning("%d journal records were made with a different prompt or settings: re-querying them", stale)
        return finished, todo

    def _query_all(self, client, df: pd.DataFrame, todo: list, msgs: dict, keys: dict, journal: Journal,
                   done: dict, n_finished: int, on_item: Callable[[dict], None] | None) -> tuple[int, int]:
        """Query ``todo`` on the thread pool; grade, journal and record (in ``done``) each answer as
        it arrives. Returns ``(n_queried, n_request_errors)``; the journal is closed at the end."""
        n_queried = n_err = 0
        pool = ThreadPoolExecutor(max_workers=max(1, int(self.concurrency)))
        bar = tqdm(total=len(df), initial=n_finished, desc=f"onboarding {self.llm_name or self.model}",
                   disable=not self.show_progress, unit="item")
        try:
            futs = [pool.submit(self._query, client, i, msgs[i], keys[i]) for i in todo]
            for fut in as_completed(futs):
                rec = fut.result()
                if not rec.get("error"):
                    rec["success"], rec["confidence"], rec["confidence_kind"] = self._grade(rec, df.loc[rec["instance_id"]])
                else:
                    n_err += 1
                journal.append(rec)
                done[rec["instance_id"]] = rec
                n_queried += 1
                bar.update(1)
                if on_item is not None:
                    on_item(rec)
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
            bar.close()
            journal.close()
        return n_queried, n_err

    def _collect(self, df: pd.DataFrame, done: dict, keys: dict) -> tuple[Results, dict]:
        """Re-grade every journaled answer with the current graders (no re-query needed)."""
        t = self._regrade(df, done, keys)
        name = self.llm_name or self.model
        results = Results(
            instances=df[[c for c in df.columns if c not in ("system_prompt", "shots")]], llms=[name],
            success=t.success[None], confidence=t.confidence[None] if self.logprobs else None,
            cost=t.cost[None] if self._priced else None,
            responses=pd.DataFrame([(name, i, a) for i, a in t.responses], columns=["llm", "instance_id", "response"]),
            name=f"onboarding:{name}",
        )
        return results, self._summary(name, t)

    @property
    def _priced(self) -> bool:
        return self.price_per_1k_prompt is not None or self.price_per_1k_completion is not None

    def _regrade(self, df: pd.DataFrame, done: dict, keys: dict) -> "_Tally":
        """Grade each item whose journal record answers the current request; tally tokens and costs."""
        t = _Tally.empty(len(df))
        for j, (iid, row) in enumerate(df.iterrows()):
            rec = done.get(iid)
            if rec is None or rec.get("error") or rec.get("key") != keys[iid]:
                continue
            t.success[j], c, kind = self._grade(rec, row)
            if c is not None:
                t.confidence[j] = c
            kind = kind or "none"
            t.kinds[kind] = t.kinds.get(kind, 0) + 1
            p, q = rec.get("prompt_tokens") or 0, rec.get("completion_tokens") or 0
            t.prompt_tokens, t.completion_tokens = t.prompt_tokens + p, t.completion_tokens + q
            if self._priced:
                t.cost[j] = request_cost(p, q, self.price_per_1k_prompt or 0.0, self.price_per_1k_completion or 0.0)
            t.latencies.append(rec["latency_s"])
            t.responses.append((iid, rec.get("answer", "")))
        return t

    def _summary(self, name: str, t: "_Tally") -> dict:
        """Item counts, accuracy, token totals, latency, confidence kinds and cost of one run."""
        n, answered = len(t.success), int(np.isfinite(t.success).sum())
        return {
            "llm": name, "model": self.model, "base_url": redact_text(self.base_url),
            "n_items": n, "n_answered": answered, "n_missing": n - answered,
            "accuracy": float(np.nanmean(t.success)) if answered else None,
            "prompt_tokens": int(t.prompt_tokens), "completion_tokens": int(t.completion_tokens),
            "total_tokens": int(t.prompt_tokens + t.completion_tokens),
            "mean_latency_s": float(np.mean(t.latencies)) if t.latencies else None,
            "confidence_kinds": t.kinds,
            "mean_confidence": float(np.nanmean(t.confidence)) if np.isfinite(t.confidence).any() else None,
            "cost": float(np.nansum(t.cost)) if self._priced else None,
        }


@dataclass
class _Tally:
    """Per-item grades of one onboarding run (arrays of shape (n_items,), NaN where not answered)
    and its running totals."""

    success: np.ndarray
    confidence: np.ndarray
    cost: np.ndarray
    kinds: dict[str, int] = field(default_factory=dict)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latencies: list = field(default_factory=list)
    responses: list = field(default_factory=list)

    @classmethod
    def empty(cls, n: int) -> "_Tally":
        return cls(*(np.full(n, np.nan, np.float32) for _ in range(3)))


def _shots(value) -> list[tuple[str, str]]:
    """Parse a ``shots`` cell: None/NaN/"" -> [], else a list (or JSON list) of [prompt, answer]."""
    if value is None or (isinstance(value, float) and np.isnan(value)) or (isinstance(value, str) and not value):
        return []
    items = json.loads(value) if isinstance(value, str) else value
    try:
        return [(str(p), str(a)) for p, a in items]
    except (TypeError, ValueError) as e:
        raise DataError(f"shots must be a list of [prompt, answer] pairs, got {str(value)[:80]!r}") from e


def onboard(prompts: pd.DataFrame, out_dir: str | os.PathLike, graders: GraderMap, **endpoint) -> tuple[Results, dict]:
    """Functional shortcut: ``Onboarder(graders=graders, **endpoint).run(prompts, out_dir)``."""
    return Onboarder(graders=graders, **endpoint).run(prompts, out_dir)
