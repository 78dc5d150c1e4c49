"""Run llama-cpp-python's OpenAI-compatible server with llama.cpp's extra buffer types off.

    python examples/llama_server.py --model model.gguf --host 127.0.0.1 --port 8080 ...

Takes exactly the options of ``python -m llama_cpp.server``. The difference: models are loaded
with ``use_extra_bufts = False`` (llama.cpp's AMX / weight-repacking buffers). With them, the
llama-cpp-python 0.3.36 wheel built on an AVX-512 + AMX CPU died with SIGSEGV on every decode, and
the server has no option to turn them off. Without them the model runs the plain CPU kernels.
In-process ``llama_cpp.Llama`` users call :func:`disable_extra_bufts` before loading a model.
"""
import runpy

import llama_cpp.llama_cpp as lib


def disable_extra_bufts() -> None:
    """Make every model loaded from now on in this process skip the extra buffer types (idempotent)."""
    default = lib.llama_model_default_params
    if getattr(default, "no_extra_bufts", False):
        return

    def params():
        p = default()
        p.use_extra_bufts = False
        return p

    params.no_extra_bufts = True
    lib.llama_model_default_params = params


if __name__ == "__main__":
    disable_extra_bufts()
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
