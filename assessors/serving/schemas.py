"""Request/response bodies of the HTTP API (pydantic v2).

Batch sizes and prompt lengths are also limited per deployment (``ServerSettings.limits``);
those limits are checked in the endpoints because they come from configuration.
"""
from __future__ import annotations

import inspect
from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, FiniteFloat, create_model, model_validator

from assessors.routing.costs import CostModel

LLMName = Field(min_length=1, max_length=200, pattern=r"^[\w.\-/:@+]+$",
                description="LLM name: letters, digits and . - / : @ + _")


def _unicode_errors(value: Any, loc: str) -> str | None:
    """Where ``value`` holds a string that is not valid Unicode (a lone surrogate), else None.

    JSON may carry ``"\\ud800"`` escapes that decode to lone surrogates: such a string cannot be
    encoded to UTF-8 (for the tokenizer, the upstream LLM or the response), so it is rejected here
    as a 422 instead of failing later.
    """
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as e:
            return f"{loc or 'text'} has a lone surrogate character at position {e.start} (not valid Unicode)"
        return None
    if isinstance(value, BaseModel):
        return None  # checked by its own validator
    items = (value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, (list, tuple))
             else ())
    for k, v in items:
        where = f"{loc}[{k}]" if isinstance(k, int) else f"{loc}.{k}" if loc else str(k)
        err = _unicode_errors(k, loc) if isinstance(k, str) else None
        err = err or _unicode_errors(v, where)
        if err:
            return err
    return None


class UnicodeText(BaseModel):
    """Request bodies whose strings must all be valid Unicode."""

    @model_validator(mode="after")
    def _valid_unicode(self):
        fields = {k: getattr(self, k) for k in type(self).model_fields} | dict(self.model_extra or {})
        err = _unicode_errors(fields, "")
        if err:
            raise ValueError(err)
        return self


class Strict(UnicodeText):
    model_config = ConfigDict(extra="forbid")


def _cost_field(param: inspect.Parameter):
    # the bounds CostModel checks: every parameter finite (JSON's Infinity, NaN and 1e999 parse
    # as floats) and >= 0, chars_per_token > 0 (it divides)
    bound = {"gt": 0} if param.name == "chars_per_token" else {"ge": 0}
    return float, Field(param.default, allow_inf_nan=False, **bound)


#: The body of a cost: :class:`~assessors.routing.costs.CostModel`'s parameters and defaults, so
#: the API and the routing cost model cannot drift apart.
CostSpec = create_model(
    "CostSpec", __base__=Strict, __doc__="Expected cost per request: see assessors.routing.costs.CostModel.",
    **{p.name: _cost_field(p) for p in inspect.signature(CostModel.__init__).parameters.values() if p.name != "self"})


class PredictRequest(Strict):
    prompts: list[str] = Field(min_length=1, description="prompts to score")
    llms: Optional[list[str]] = Field(None, min_length=1, description="registered LLM names (default: all)")


class PromptScores(BaseModel):
    p_success: dict[str, float]
    p_std: Optional[dict[str, Optional[float]]] = Field(
        None, description="posterior-predictive spread of p_success (assessors that give one, e.g. "
                          "assessor=latent); null for an LLM scored by its fallback")


class PredictResponse(BaseModel):
    llms: list[str]
    results: list[PromptScores]
    predictors: Optional[dict[str, str]] = Field(
        None, description="LLMs not scored by the assessor, and what scored them (e.g. reference_only, the "
                          "fallback of an 'out of population' trust verdict)")


class RouteRequest(PredictRequest):
    pass


class Decision(BaseModel):
    llm: Optional[str] = Field(description="chosen LLM; null when the router abstains")
    abstained: bool
    p_success: dict[str, float]
    cost: dict[str, float]
    expected_cost: float


class RouterInfo(BaseModel):
    policy: str
    knob: str
    value: float


class RouteResponse(BaseModel):
    router: RouterInfo
    decisions: list[Decision]


class EvidenceItem(Strict):
    prompt: str = Field(min_length=1, description="a prompt the LLM answered (any prompt, not only reference ones)")
    success: Optional[FiniteFloat] = Field(description="its graded answer: 0 or 1 (null: not answered)")


class RegisterRequest(Strict):
    """An LLM described by its results on the reference set, or by evidence on any prompts."""

    name: str = LLMName
    # finite: an Infinity or NaN (which JSON parsers accept) would otherwise read as "not evaluated"
    reference: Union[dict[str, Optional[FiniteFloat]], list[Optional[FiniteFloat]], None] = Field(
        None, description="success on the reference set: {reference_id: 0/1} or a list in reference order "
                          "(null or -1 = not evaluated)")
    evidence: Optional[list[EvidenceItem]] = Field(
        None, min_length=1, description="instead of reference: graded answers on any prompts, embedded like the "
                                        "prompts of /v1/predict (assessors with a posterior only: assessor=latent; "
                                        "at most limits.max_batch items of limits.max_prompt_chars characters)")
    cost: CostSpec = Field(default_factory=CostSpec)
    overwrite: bool = False

    @model_validator(mode="after")
    def _one_description(self):
        if (self.reference is None) == (self.evidence is None):
            raise ValueError("give either reference (results on the reference set) or evidence "
                             "([{prompt, success}] on any prompts), not " + ("both" if self.evidence else "neither"))
        return self


class LLMInfo(BaseModel):
    name: str
    source: str
    n_reference: int
    n_answered: int
    reference_accuracy: Optional[float]
    n_evidence: Optional[int] = Field(None, description="evidence items of an LLM registered from evidence (then "
                                      "n_reference is 0 and n_answered counts the answered evidence items)")
    evidence_accuracy: Optional[float] = Field(None, description="mean of the answered evidence items")
    cost: dict[str, float]
    trust: Optional[dict[str, Any]] = Field(None, description="trust report computed at registration, if enabled")
    predictor: str = Field("assessor", description="what scores this LLM: the assessor, or the fallback its trust "
                           "verdict asked for (reference_only)")


class LLMList(BaseModel):
    llms: list[LLMInfo]


class ReferenceSet(BaseModel):
    reference_ids: list[str]


class QueueInfo(BaseModel):
    """This worker's micro-batcher: queued prompts and counters since start."""

    pending_prompts: int
    batches: int
    prompts_encoded: int
    prompts_cancelled: int = Field(description="prompts dropped because their request timed out or went away")
    jobs_cancelled: int
    rejected: int = Field(description="requests answered 503 because the queue was full")
    heap_trims: int = Field(0, description="times free heap memory was returned to the OS (server.batching.trim_s)")
    heap_trim_ms: float = Field(0.0, description="time those trims took, in total")


class Health(BaseModel):
    status: Literal["starting", "ready", "failed"] = Field(
        description="starting: model loading or the first encode not done yet (HTTP 503); ready: serving; "
                    "failed: start-up failed, see the server log (HTTP 503)")
    pid: int = Field(description="worker process id (each uvicorn worker has its own registry)")
    n_llms: Optional[int] = None
    n_reference: Optional[int] = None
    router: Optional[RouterInfo] = None
    featurizer: Optional[str] = None
    encoder_precision: Optional[str] = Field(None, description="float32 or bfloat16, for featurizers with "
                                                                "the option (server.precision)")
    queue: Optional[QueueInfo] = None
    trust_policy: Optional[dict[str, Any]] = Field(
        None, description="thresholds and fallback of the posterior trust report (assessor=latent) and their "
                          "source: 'validated on N validation LLMs' (stored with the model by train.py), "
                          "'stated defaults', plus the keys trust.posterior sets")
    trust_target: Optional[dict[str, Any]] = Field(
        None, description="the prompts the posterior trust report's expected accuracy and AUC are about (every "
                          "report's `target`): source 'reference' (the model's reference prompts) or 'pool' (the "
                          "candidate pool, server.onboarding.pool; n_available: the pool's size when "
                          "server.onboarding.trust_target_max cut it), and n_prompts")
    onboarding_pool: Optional[dict[str, Any]] = Field(
        None, description="the candidate pool of /next and /answers (server.onboarding.pool): its source (prompt "
                          "files, or the model's training prompts) and n_prompts; absent: the reference set")


class ErrorBody(BaseModel):
    type: str
    message: str
    details: Optional[list[dict[str, Any]]] = None


class ErrorResponse(BaseModel):
    error: ErrorBody


class ChatMessage(UnicodeText):
    model_config = ConfigDict(extra="allow")
    role: str = Field(min_length=1, max_length=32)
    content: Union[str, list[dict[str, Any]], None] = None


class ChatCompletionRequest(UnicodeText):
    """OpenAI chat-completions body; extra fields (temperature, max_tokens...) are forwarded."""

    model_config = ConfigDict(extra="allow")
    model: str = Field(min_length=1, max_length=200)
    messages: list[ChatMessage] = Field(min_length=1)
    stream: Optional[bool] = False
