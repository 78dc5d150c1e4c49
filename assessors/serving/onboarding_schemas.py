"""Request/response bodies of adaptive onboarding and the trust report (``/v1/llms/{name}/...``)."""
from __future__ import annotations

from typing import Any, Optional

from pydantic import BaseModel, Field, FiniteFloat

from assessors.serving.schemas import CostSpec, LLMInfo, Strict


class NextRequest(Strict):
    n: int = Field(1, ge=1, le=100, description="how many prompts to propose")
    candidates: Optional[list[str]] = Field(None, min_length=1, description="reference ids (candidate pool ids "
                                            "with server.onboarding.pool) to choose from (default: every one not "
                                            "answered yet)")
    start: bool = Field(False, description="the LLM is not registered yet: propose its first prompts under the prior")


class PosteriorInfo(BaseModel):
    expected_accuracy: float = Field(description="posterior-predictive accuracy on the reference prompts (the "
                                     "candidate pool's with server.onboarding.pool)")
    low: float = Field(description="90% band of the expected accuracy")
    high: float
    width: float = Field(description="high - low: what the stopping rule compares with stop_width")
    n_answered: int
    estimator: str = Field("model", description="which estimate expected_accuracy is (adaptive.estimator): model, "
                           "design or composite")
    model_accuracy: Optional[float] = Field(None, description="posterior-predictive accuracy (may be biased for an "
                                            "LLM unlike the training LLMs)")
    design_accuracy: Optional[float] = Field(None, description="design-unbiased accuracy from the random (explore) "
                                             "answers; null with fewer than 2 of them (adaptive.explore=0)")
    design_low: Optional[float] = Field(None, description="90% interval of design_accuracy")
    design_high: Optional[float] = None
    n_random: int = Field(0, description="answers to random (explore) prompts behind design_accuracy")


class StopInfo(BaseModel):
    met: bool = Field(description="the budget is reached or the band is narrow and stable: stop asking")
    reason: Optional[str] = None


class NextResponse(BaseModel):
    llm: str
    ids: list[str] = Field(description="reference ids (candidate pool ids with server.onboarding.pool) to ask next, "
                           "most informative first (empty: nothing left)")
    prompts: Optional[dict[str, str]] = Field(None, description="{id: prompt text} of the proposed ids, with "
                                              "server.onboarding.pool (null on the reference set)")
    posterior: PosteriorInfo
    stop: StopInfo


class AnswersRequest(Strict):
    answers: dict[str, Optional[FiniteFloat]] = Field(min_length=1, description="{reference id: 0 or 1} graded answers "
                                                "(null: not answered); with server.onboarding.pool, pool or "
                                                "reference ids (null withdraws an answer)")
    create: bool = Field(False, description="register the LLM if it is not registered yet")
    cost: Optional[CostSpec] = Field(None, description="cost model when creating (default: free)")


class AnswersResponse(BaseModel):
    llm: LLMInfo
    posterior: PosteriorInfo
    stop: StopInfo


class TrustResponse(BaseModel):
    llm: str
    predictor: str = Field(description="what scores this LLM: the assessor, or the fallback its verdict asked for")
    trust: dict[str, Any] = Field(description="the trust report computed at registration (version 2, with verdict "
                                  "and fallback, for assessors with a posterior)")
