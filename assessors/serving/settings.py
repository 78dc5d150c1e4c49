"""Server settings (``server:`` in ``conf/predict.yaml``), validated by pydantic."""
from __future__ import annotations

from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator

#: ``server.onboarding.pool`` value that makes the model's training prompts the candidate pool.
TRAINING_POOL = "training"


class _Cfg(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AuthSettings(_Cfg):
    enabled: bool = True
    api_keys_env: list[str] = Field(default_factory=lambda: ["ASSESSORS_API_KEYS"],
                                    description="NAMES of env vars holding API keys (comma-separated values)")


class Limits(_Cfg):
    max_body_bytes: int = Field(1_000_000, gt=0, description="request body size; beyond it: 413")
    body_timeout_s: float = Field(10.0, gt=0, description="time from a request's headers by which its whole "
                                  "body must have arrived; beyond it: 408 and the connection is closed")
    max_slow_bodies_per_client: int = Field(4, gt=0, description="request bodies of one client address arriving "
                                            "for over a second at once; the next: 429 and the connection is closed")
    max_batch: int = Field(256, gt=0, description="prompts per request")
    max_prompt_chars: int = Field(32_000, gt=0)
    max_llms: int = Field(64, gt=0, description="LLMs per request")
    max_registered: int = Field(1_000, gt=0)
    max_task_prompts: int = Field(10_000, gt=0, description="prompts of one POST /v1/tasks/calibrate (its body "
                                  "is also bound by max_body_bytes)")
    max_task_answers: int = Field(100_000, gt=0, description="calibration answers of one POST /v1/tasks/calibrate")
    request_timeout_s: float = Field(30.0, gt=0, description="time a /v1/predict or /v1/route request (or the "
                                                             "routing step of a proxied chat) may take, queueing included")


class Batching(_Cfg):
    """Micro-batching of concurrent requests in front of the encoder (see ``serving/batcher.py``)."""

    window_ms: float = Field(2.0, ge=0, description="wait this long for more requests when the encoder was idle")
    max_prompts: int = Field(32, gt=0, description="prompts per encoder batch")
    quantum: int = Field(8, gt=0, description="prompts a client gets per round-robin turn within a batch")
    queue_max_prompts: int = Field(2048, gt=0, description="queued prompts over all clients; beyond this: 503")
    client_max_prompts: int = Field(512, gt=0, description="queued prompts of one client; beyond this: 503")
    batch_ms: float = Field(0.0, ge=0, description="cap a batch at what the encoder does in this long at its "
                                                     "recent rate (at least quantum prompts); 0: max_prompts only")
    trim_s: float = Field(1.0, ge=0, description="return the C heap's free memory to the OS (glibc malloc_trim) "
                                                   "between batches at most this often; 0: never")
    kernel_cache: int = Field(16, ge=0, description="bfloat16 encoder kernels (oneDNN primitives, one per input "
                                                    "shape) kept for reuse; 0: oneDNN's default of 1,024, which a "
                                                    "server fills over thousands of requests")


class Upstream(_Cfg):
    """An OpenAI-compatible endpoint serving a registered LLM (for /v1/chat/completions).

    The defaults suit an interactive call: a dead host is reported after ``connect_timeout_s``
    (x ``max_retries + 1``), a stalled one after ``timeout_s``; raise ``timeout_s`` for long
    completions.
    """

    base_url: str
    model: str
    api_key_env: Optional[str] = None
    timeout_s: float = Field(30.0, gt=0, description="read/write timeout of one upstream call")
    connect_timeout_s: float = Field(3.0, gt=0, description="TCP/TLS connect timeout of one upstream call")
    max_retries: int = Field(1, ge=0, description="retries of a failed upstream call (the openai client's)")


class OnboardingSettings(_Cfg):
    """Adaptive onboarding over HTTP (``POST /v1/llms/{name}/next`` and ``/answers``, latent assessors)."""

    pool: Union[Literal["training"], list[str]] = Field(
        default_factory=list, description="candidate pool: prompt files (CSV/JSONL, the formats of onboard.prompts) "
        "whose prompts /next proposes and whose ids /answers accepts, the answers describing the LLM as evidence; "
        "'training': the model's training prompts, read from the data dir (data_dir); empty: the model's reference set")
    trust_target_max: Optional[int] = Field(
        10_000, ge=1, description="with a pool, the posterior trust report is about the pool's prompts: a seeded "
        "random subsample of this many when the pool is larger (the report's cost per registration grows with "
        "them: about 0.4-0.6 s at 10,000 prompts with the default latent model on 2 cores); null: the whole pool")

    @field_validator("pool", mode="before")
    @classmethod
    def _one_file(cls, v):
        """A single file name (``server.onboarding.pool=my.csv``) is a pool of one file; ``[training]``
        is ``training``."""
        if isinstance(v, (list, tuple)) and list(v) == [TRAINING_POOL]:
            return TRAINING_POOL
        return [v] if isinstance(v, str) and v != TRAINING_POOL else v


class ServerSettings(_Cfg):
    """Everything the app factory needs; models are only ever loaded from ``model_uri``."""

    host: str = "127.0.0.1"
    port: int = Field(8000, ge=0, le=65535)
    model_uri: Optional[str] = None
    tracking_uri: Optional[str] = Field(None, description="MLflow store that runs:/ and models:/ URIs resolve in")
    auth: AuthSettings = Field(default_factory=AuthSettings)
    limits: Limits = Field(default_factory=Limits)
    batching: Batching = Field(default_factory=Batching)
    workers: int = Field(1, ge=1, description="uvicorn worker processes; each loads its own model and registry")
    embed_cache_size: int = Field(10_000, ge=0)
    precision: Optional[Literal["float32", "bfloat16", "auto"]] = Field(
        "auto", description="encoder arithmetic for sentence-transformers featurizers; auto: bfloat16 on a CPU "
                            "with AMX, else float32; null: the trained featurizer's")
    adaptive: dict[str, Any] = Field(default_factory=dict, description="AdaptiveSelector settings of "
                                     "POST /v1/llms/{name}/next (latent assessors)")
    onboarding: OnboardingSettings = Field(default_factory=OnboardingSettings)
    data_dir: Optional[str] = Field(None, description="where server.onboarding.pool=training reads the model's "
                                    "training prompt files (paths.data_dir; null: $ASSESSORS_DATA_DIR)")
    cache_dir: Optional[str] = Field(None, description="the download cache, looked in after data_dir (paths.cache_dir)")
    upstreams: dict[str, Upstream] = Field(default_factory=dict)
    log_level: str = "info"
    # what the engine is built from when the app factory loads it itself (see assessors.routing.setup.build_engine)
    router: Optional[dict[str, Any]] = Field(None, description="Hydra node of the routing policy (_target_)")
    llms: list[dict[str, Any]] = Field(default_factory=list, description="LLMs registered at start")
    known_llms: Any = Field(None, description="training LLMs to register by name: list, 'all' or null")
    default_cost: dict[str, float] = Field(default_factory=dict)
    trust: Optional[dict[str, Any]] = Field(None, description="Hydra node of a trust-report callable (reference -> dict)")
    task_calibration: Optional[dict[str, Any]] = Field(None, description="Hydra node of POST /v1/tasks/calibrate's "
                                                       "calibration (conf/task_calibration/); null: its class defaults")
