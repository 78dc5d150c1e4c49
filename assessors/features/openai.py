"""OpenAI (or any OpenAI-compatible server's) embeddings through the ``openai`` client."""
from __future__ import annotations

import logging
import os

import numpy as np

from assessors.errors import ConfigError, OfflineError
from assessors.features.base import Featurizer, unit_rows

log = logging.getLogger(__name__)


class OpenAIEmbeddingFeaturizer(Featurizer):
    """Embeddings from ``/v1/embeddings``; shape (n_texts, dimensions), float32, unit norm.

    Texts go out in batches of ``batch_size``. Failed requests (connection errors, 408, 409,
    429, 5xx) are retried by the ``openai`` client up to ``max_retries`` times with
    exponential backoff and jitter, honouring ``Retry-After``.

    ``dimensions`` is sent to the server (text-embedding-3 models shorten their vectors
    natively). Servers that ignore it (e.g. llama.cpp) return longer vectors, and servers that
    reject it get the request again without it; either way the vectors are truncated to the
    first ``dimensions`` components and L2-renormalised client-side, which is what
    text-embedding-3 does server-side and how the paper truncated its embeddings.

    Servers that return one vector per token instead of one per text (llama-cpp-python's server
    with a generative model, whose pooling is "none": ``embedding`` is a tokens x dim list per
    text) are detected, and each text's token vectors are mean-pooled into one vector; an INFO
    log says so once. Start such servers with mean pooling (llama.cpp ``--pooling mean``) to pool
    server-side instead.

    Parameters
    ----------
    model : str
        Embedding model name.
    dimensions : int or None
        Output size; None keeps the model's native size.
    base_url : str or None
        Server URL (e.g. ``http://127.0.0.1:8000/v1``); None means api.openai.com. A URL with
        credentials (``http://user:password@host/v1``) works in this process but is never stored:
        params, logs, the cache identity and pickles keep it redacted, so a pickled featurizer
        needs ``base_url_env`` to reach such a server again.
    base_url_env : str or None
        Name of an environment variable holding the server URL (it wins over ``base_url`` when
        set); the place for URLs with credentials. Read at use, never stored.
    api_key_env : str
        Name of the environment variable holding the key. The key itself is never stored in
        params, logged, or pickled. With a ``base_url`` and no key set, a placeholder is sent
        (local servers need none).
    batch_size : int
        Texts per request.
    max_retries : int
        Retries per request after the first attempt.
    timeout : float
        Seconds per request.
    show_progress : bool
        Show a progress bar over batches.
    cache_dir : str or None
        Embedding cache directory; None disables caching.
    """

    runtime_params = Featurizer.runtime_params + ("api_key_env", "base_url_env", "max_retries", "timeout")
    # The client holds the key and a connection pool: build it lazily, never pickle it.
    transient_attrs = ("_client", "_send_dimensions", "_warned_tokens")

    def __init__(self, model: str = "text-embedding-3-large", dimensions: int | None = 1024,
                 base_url: str | None = None, api_key_env: str = "OPENAI_API_KEY", batch_size: int = 256,
                 max_retries: int = 6, timeout: float = 60.0, show_progress: bool = True,
                 cache_dir: str | None = None, base_url_env: str | None = None):
        super().__init__(cache_dir=cache_dir)
        self.model = model
        self.dimensions = dimensions
        self.base_url = base_url
        self.base_url_env = base_url_env
        self.api_key_env = api_key_env
        self.batch_size = batch_size
        self.max_retries = max_retries
        self.timeout = timeout
        self.show_progress = show_progress

    def __getstate__(self):
        from assessors.secrets import redact_text

        state = super().__getstate__()
        if isinstance(state.get("base_url"), str):
            state["base_url"] = redact_text(state["base_url"])
        return state

    def _url(self) -> str | None:
        """The server URL in effect: ``$base_url_env`` when set, else ``base_url``."""
        if self.base_url_env:
            url = os.environ.get(self.base_url_env)
            if url:
                return url
            if self.base_url is None:
                raise ConfigError(f"OpenAIEmbeddingFeaturizer: set the environment variable {self.base_url_env} "
                                  "to the embedding server URL (base_url_env names it)")
        return self.base_url

    def _server(self) -> str:
        """The server for messages and logs (credentials removed)."""
        from assessors.secrets import redact_text

        url = self._url()
        return "api.openai.com" if url is None else redact_text(url)

    def _identity_params(self) -> dict:
        # the server in effect names the output space, however it was given
        params = super()._identity_params()
        params["base_url"] = self._url()
        return params

    def _get_client(self):
        client = getattr(self, "_client", None)
        if client is None:
            import openai

            from assessors.secrets import quiet_http_loggers

            quiet_http_loggers()  # the clients log request URLs, credentials included, at INFO

            key = os.environ.get(self.api_key_env)
            url = self._url()
            if not key:
                if url is None:
                    raise ConfigError(f"OpenAIEmbeddingFeaturizer: set the environment variable "
                                      f"{self.api_key_env} to your API key (or give base_url for a local server)")
                key = "no-key"  # OpenAI-compatible local servers ignore it, the client requires one
            client = openai.OpenAI(api_key=key, base_url=url, max_retries=int(self.max_retries),
                                   timeout=float(self.timeout))
            self._client = client
        return client

    def _request(self, batch: list[str]) -> np.ndarray:
        import openai

        client = self._get_client()
        kwargs = {}
        if self.dimensions is not None and getattr(self, "_send_dimensions", True):
            kwargs["dimensions"] = int(self.dimensions)
        try:
            resp = client.embeddings.create(model=self.model, input=batch, **kwargs)
        except openai.BadRequestError as e:
            if "dimensions" in kwargs and "dimension" in str(e).lower():
                log.warning("server %s rejected 'dimensions'; truncating client-side", self._server())
                self._send_dimensions = False
                return self._request(batch)
            raise
        rows = sorted(resp.data, key=lambda d: d.index)
        if len(rows) != len(batch):
            raise RuntimeError(f"embedding server returned {len(rows)} vectors for {len(batch)} inputs")
        return np.stack([self._one_vector(r.embedding) for r in rows])

    def _one_vector(self, embedding) -> np.ndarray:
        """One text's embedding -> (dim,); per-token output (tokens, dim) is mean-pooled."""
        e = np.asarray(embedding, dtype=np.float32)
        if e.ndim == 2 and e.shape[0] > 0:
            if not getattr(self, "_warned_tokens", False):
                log.info("server %s returns per-token embeddings (tokens x %d); mean-pooling them per text",
                         self.base_url or "openai", e.shape[1])
                self._warned_tokens = True
            return e.mean(axis=0)
        if e.ndim != 1 or e.size == 0:
            raise RuntimeError(f"embedding server {self.base_url or 'openai'} returned an embedding of shape "
                               f"{e.shape}; expected (dim,) or per-token (tokens, dim)")
        return e

    def _fit_dimensions(self, emb: np.ndarray) -> np.ndarray:
        if self.dimensions is None or emb.shape[1] == self.dimensions:
            return emb
        if emb.shape[1] < self.dimensions:
            raise ConfigError(f"model {self.model!r} returns {emb.shape[1]}-dim vectors; "
                              f"dimensions={self.dimensions} is larger")
        return unit_rows(emb[:, : int(self.dimensions)])  # truncated vectors are no longer unit length

    def _transform(self, texts: list[str]) -> np.ndarray:
        import openai
        from tqdm.auto import tqdm

        from assessors.secrets import redact_text

        if int(self.batch_size) < 1:
            raise ConfigError(f"batch_size must be >= 1, got {self.batch_size}")
        # The API rejects empty strings; a single space embeds as "nothing" on every server.
        texts = [t if t.strip() else " " for t in texts]
        bs = int(self.batch_size)
        starts = range(0, len(texts), bs)
        out = []
        for start in tqdm(starts, desc=f"embedding ({self.model})", unit="batch",
                          disable=not self.show_progress or len(starts) <= 1):
            try:
                emb = self._request(texts[start: start + bs])
            except openai.APIConnectionError as e:
                raise OfflineError(f"cannot reach embedding server {self._server()} "
                                   f"after {self.max_retries} retries: {redact_text(str(e))}") from e
            except openai.APIStatusError as e:
                raise RuntimeError(f"embedding request for texts {start}..{start + bs - 1} failed with HTTP "
                                   f"{e.status_code} after {self.max_retries} retries: {redact_text(e.message)}") from e
            out.append(self._fit_dimensions(emb))
        if not out:
            return np.zeros((0, self.dimensions or 0), np.float32)
        return np.concatenate(out).astype(np.float32, copy=False)
