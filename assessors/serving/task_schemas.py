"""Request/response bodies of task onboarding (``POST /v1/tasks/calibrate``).

The JSON form of ``predict.py mode=calibrate_task``'s files: the task's prompts as
``{instance_id, prompt}`` rows (every prompt of the task, calibrated or not) and the calibration
answers as ``{llm, instance_id, success}`` rows (the CSV's columns).
"""
from __future__ import annotations

from typing import Optional

from pydantic import BaseModel, Field, FiniteFloat

from assessors.serving.schemas import Strict


class TaskPrompt(Strict):
    instance_id: str = Field(min_length=1, max_length=500, description="the prompt's id, unique within the task")
    prompt: str = Field(description="its text (not blank: it is featurized)")


class CalibrationAnswer(Strict):
    llm: str = Field(min_length=1, max_length=200, description="a training LLM of the served model, by the name it "
                     "knows (GET /v1/llms lists the registered ones; a model's known LLMs are its training LLMs)")
    instance_id: str = Field(min_length=1, max_length=500, description="one of the task's prompts")
    success: Optional[FiniteFloat] = Field(description="the graded answer: 0 or 1 (null: not graded)")


class CalibrateTaskRequest(Strict):
    prompts: list[TaskPrompt] = Field(min_length=1, description="every prompt of the new task (at most "
                                      "limits.max_task_prompts)")
    answers: list[CalibrationAnswer] = Field(min_length=1, description="known LLMs' graded answers on some of them")
    min_answers: int = Field(5, ge=1, le=10_000, description="answers a prompt needs to be calibrated on its own; "
                             "at least one prompt must have them")
    register_as: Optional[str] = Field(None, min_length=1, max_length=200, pattern=r"^[\w.\-/:@+ ]+$",
                                       description="a registered model name: the adapted model becomes its next version")


class TaskItem(BaseModel):
    instance_id: str
    status: str = Field(description="calibrated (its own answers), from_task (the task's correction), "
                        "too_few_answers (answered fewer than min_answers times: the task's correction)")
    n_answers: int


class RegisteredModel(BaseModel):
    name: str
    version: int


class CalibrateTaskResponse(BaseModel):
    task_prompts: int
    calibration_llms: int
    prompts: int
    answers: int = Field(description="graded answers used")
    calibrated: int
    from_task: int
    too_few_answers: int
    prior_only: int
    model_uri: str = Field(description="the adapted model, logged to the server's MLflow store")
    registered: Optional[RegisteredModel] = None
    serve: str = Field(description="the command that serves the adapted model (this server keeps serving its own)")
    items: list[TaskItem]
