"""Run socialfoundations/benchmark-prediction's estimators next to ours on identical splits.

For every score-matrix benchmark, model split (interpolation, extrapolation), core size and trial,
the source/target LLMs come from our :func:`assessors.estimation.harness.model_split` and the random
core set from our harness seed (``default_rng(10_000 + trial)``). Each shared method is run twice on
exactly these inputs: their class (``fit(source_full_scores, coreset_size, seed)`` then
``predict(target[:, get_coreset()])``, as their ``main.py`` does, with ``seed = trial``) and our
estimator from ``conf/experiment/benchmark_prediction.yaml``. Methods that pick their own core
(lasso, anchor points) are left to pick it on both sides; the JSON reports how much the two cores
overlap. EG is the mean absolute error in accuracy points (x100) per trial, averaged over trials;
EGR is ``(EG - EG_random_sampling) / EG_random_sampling`` in %, each side against its own random
sampling. One JSON object goes to stdout, progress to stderr.

Their code is not part of this repository: clone it and pass the path::

    git clone https://github.com/socialfoundations/benchmark-prediction /tmp/benchmark-prediction
    ASSESSORS_DATA_DIR=/path/to/data python benchmarks/socialfoundations_compare.py \\
        --benchpred-path /tmp/benchmark-prediction [--benchmarks rte,mrpc] [--sizes 50] [--trials 10] \\
        [--trials-per-method lasso=3,anchor_points_predictor=5] > compare.json

A method whose dependencies are missing (their p-IRT / gp-IRT need pyro-ppl, py-irt, ordered_set)
is recorded as ``"skipped: <reason>"`` and not run on either side.
"""
from __future__ import annotations

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")  # the comparison is sequential; keep BLAS from oversubscribing
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import argparse
import contextlib
import importlib
import importlib.util
import json
import subprocess
import sys
import time
import types
import warnings
from collections import defaultdict

import numpy as np

# our preset name -> (their module, their class); order = output order, random_sampling first (EGR base)
PAIRS = {
    "random_sampling": ("random", "RandomSampling"),
    "random_sampling_learn": ("random", "RandomSamplingAndLearn"),
    "aipw": ("aipw", "AIPWPred"),
    "pca": ("pca", "PCAPred"),
    "lasso": ("lasso", "LassoPred"),
    "anchor_points_weighted": ("anchor_points", "AnchorPointsWeightedPred"),
    "anchor_points_predictor": ("anchor_points", "AnchorPointPredictorPred"),
    "p_irt": ("tiny_bench", "PIRTPred"),
    "gp_irt": ("tiny_bench", "GPIRTPred"),
}
# third-party packages their modules need beyond ours (checked first, so the skip names all of them)
DEPS = {"tiny_bench": ("pyro", "ordered_set", "typer", "rich", "pydantic"), "anchor_points": ("kmedoids",),
        "base": ("torch",)}
DEFAULT_BENCHMARKS = ("commonsense,gsm,legalbench,math,med_qa,mmlu,mrpc,rte,sst2,qnli,ifeval,musr,"
                      "openllm_math,arc_challenge")
CLONE_HINT = ("clone https://github.com/socialfoundations/benchmark-prediction and pass its path with "
              "--benchpred-path (or set BENCHPRED_PATH)")


def load_theirs(path: str) -> tuple[dict, dict]:
    """Import their method classes from a clone at ``path``.

    Returns
    -------
    classes : dict ours-name -> class
    skipped : dict ours-name -> "skipped: <reason>"
    """
    pkg_dir = os.path.join(path, "benchpred")
    if not os.path.isfile(os.path.join(pkg_dir, "base.py")):
        sys.exit(f"socialfoundations_compare: no benchpred/base.py under {path!r}; {CLONE_HINT}")
    # a stub package instead of running benchpred/__init__.py: it imports every method, so one
    # missing dependency (pyro for IRT) would make all of them unusable
    pkg = types.ModuleType("benchpred")
    pkg.__path__ = [pkg_dir]
    sys.modules["benchpred"] = pkg
    classes, skipped = {}, {}
    for ours, (mod_name, cls_name) in PAIRS.items():
        missing = [d for d in DEPS.get("base", ()) + DEPS.get(mod_name, ())
                   if importlib.util.find_spec(d) is None]
        if missing:
            skipped[ours] = f"skipped: missing dependencies {', '.join(missing)} (their benchpred.{mod_name})"
            continue
        try:
            mod = importlib.import_module(f"benchpred.{mod_name}")
        except Exception as e:  # noqa: BLE001 - any import failure means the method cannot run
            skipped[ours] = f"skipped: importing benchpred.{mod_name} failed: {type(e).__name__}: {e}"
            continue
        if mod_name == "anchor_points":
            _single_thread_kmedoids(mod)
        classes[ours] = getattr(mod, cls_name)
    return classes, skipped


def _single_thread_kmedoids(mod) -> None:
    """Make their ``kmedoids.fasterpam(diss, k, init="random")`` call run on one thread.

    Left at ``n_cpu=-1``, kmedoids runs its parallel variant on every core for >= 1000 items, seeded
    by a draw from the global numpy RNG (which their ``set_random_seed`` fixed). The machine is
    shared, so we keep that seeding (``random_state=np.random`` draws the same seed) on one thread;
    below 1000 items their call is already single-threaded and unchanged.
    """
    import kmedoids

    def fasterpam(diss, medoids, max_iter=100, init="random", random_state=None, n_cpu=-1):
        if np.shape(diss)[0] >= 1000 and random_state is None:
            random_state = np.random
        return kmedoids.fasterpam(diss, medoids, max_iter, init, random_state, n_cpu=1)

    mod.kmedoids = types.SimpleNamespace(fasterpam=fasterpam)
    mod.tqdm = lambda it, *a, **k: it  # their per-anchor progress bar would flood stderr


@contextlib.contextmanager
def forced_core(core: np.ndarray):
    """Their random-core ``fit`` draws ``np.random.permutation(num_data)[:coreset_size]`` first; make
    that first draw return our core (after drawing theirs, so the RNG stream that follows, e.g. PCA's
    validation split, is the one their seed gives)."""
    orig, used = np.random.permutation, []

    def permutation(x):
        out = orig(x)
        if used:
            return out
        used.append(True)
        assert np.isscalar(x) and int(x) > core.max(), "first permutation is not over the items"
        return np.concatenate([core, np.setdiff1d(np.arange(int(x)), core)])

    np.random.permutation = permutation
    try:
        yield
    finally:
        np.random.permutation = orig


def run_theirs(cls, S32, src, tgt, core, size, trial, selects, cache):
    """Point estimates for the targets, core used, fit+predict seconds (None when served from cache)."""
    # their lasso is deterministic given the sources (cyclic coordinate descent, no RNG) and costs
    # up to minutes per fit (1000 cold-started fits on large benchmarks): reuse it across trials
    key = (cls.__name__, src.tobytes(), size) if cls.__name__ == "LassoPred" else None
    t0 = time.perf_counter()
    fitted = not (key is not None and key in cache)
    if not fitted:
        m = cache[key]
    else:
        m = cls()
        with contextlib.nullcontext() if selects else forced_core(core):
            m.fit(S32[src], size, seed=trial)  # their AnchorPointPredictorPred.fit returns None
        if key is not None:
            cache[key] = m
    c = np.asarray(m.get_coreset(), dtype=int)
    point = np.asarray(m.predict(S32[tgt][:, c]), dtype=np.float64).reshape(-1)
    return point, c, (time.perf_counter() - t0) if fitted else None


def run_ours(proto, S, llms, src, tgt, core, size, trial):
    """Our estimator exactly as the harness runs it."""
    from sklearn.base import clone

    t0 = time.perf_counter()
    est = clone(proto).set_params(core_size=size, seed=trial)
    est.fit(S[src], None, core_index=None if est.selects_core else core, source_llms=[llms[i] for i in src])
    out = est.estimate(S[tgt][:, est.core_index_], target_llms=[llms[i] for i in tgt])
    return out.point, est.core_index_, time.perf_counter() - t0


def summarise(rows: list[dict]) -> dict:
    """EG / EGR per (benchmark, split, size, method) and averaged over benchmarks."""
    eg = defaultdict(lambda: defaultdict(list))
    for r in rows:
        g = eg[(r["benchmark"], r["split"], r["size"], r["method"])]
        for k in ("eg_theirs", "eg_ours", "abs_diff", "overlap"):
            if r[k] is not None:
                g[k].append(r[k])
    per = {}
    for (b, sp, sz, m), g in eg.items():
        per.setdefault(b, {}).setdefault(sp, {}).setdefault(str(sz), {})[m] = {
            "eg_theirs": float(np.mean(g["eg_theirs"])) if g["eg_theirs"] else None,
            "eg_ours": float(np.mean(g["eg_ours"])),
            "mean_abs_point_diff": float(np.mean(g["abs_diff"])) if g["abs_diff"] else None,
            "core_overlap": float(np.mean(g["overlap"])) if g["overlap"] else None,
            "trials": len(g["eg_ours"]), "errors_theirs": len(g["eg_ours"]) - len(g["eg_theirs"])}
    avg = {}
    for b, d in per.items():
        for sp, dd in d.items():
            for sz, ms in dd.items():
                for m, v in ms.items():
                    base = ms.get("random_sampling", {})
                    for side in ("theirs", "ours"):
                        e, e0 = v[f"eg_{side}"], base.get(f"eg_{side}")
                        v[f"egr_{side}"] = None if e is None or not e0 else 100 * (e - e0) / e0
                    a = avg.setdefault(sp, {}).setdefault(sz, {}).setdefault(m, defaultdict(list))
                    for k in ("eg_theirs", "eg_ours", "egr_theirs", "egr_ours", "mean_abs_point_diff"):
                        if v[k] is not None:
                            a[k].append(v[k])
    for sp in avg:
        for sz in avg[sp]:
            for m, a in avg[sp][sz].items():
                avg[sp][sz][m] = {k: round(float(np.mean(x)), 3) for k, x in a.items()} | {
                    "benchmarks": len(a["eg_ours"])}
    return {"average_over_benchmarks": avg, "per_benchmark": _rounded(per)}


def _rounded(d: dict) -> dict:
    return {k: _rounded(v) if isinstance(v, dict) else (round(v, 3) if isinstance(v, float) else v)
            for k, v in d.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--benchpred-path", default=os.environ.get("BENCHPRED_PATH"),
                    help="clone of socialfoundations/benchmark-prediction (env BENCHPRED_PATH)")
    ap.add_argument("--benchmarks", default=DEFAULT_BENCHMARKS)
    ap.add_argument("--splits", default="interpolation,extrapolation")
    ap.add_argument("--sizes", default="50")
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--trials-per-method", default="", help="e.g. lasso=3,anchor_points_predictor=5")
    ap.add_argument("--methods", default=",".join(PAIRS))
    args = ap.parse_args()
    if not args.benchpred_path or not os.path.isdir(args.benchpred_path):
        sys.exit(f"socialfoundations_compare: benchpred path {args.benchpred_path!r} not found; {CLONE_HINT}")
    warnings.simplefilter("ignore")  # their Lasso / PCA emit convergence warnings on every fit

    from hydra import compose, initialize_config_dir
    from hydra.utils import instantiate
    from threadpoolctl import threadpool_limits
    from tqdm.auto import tqdm

    from assessors.estimation.harness import model_split

    classes, skipped = load_theirs(os.path.abspath(args.benchpred_path))
    conf = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "conf"))
    with initialize_config_dir(config_dir=conf, version_base=None):
        cfg = compose("train", overrides=["experiment=benchmark_prediction", "seed=0"])
    methods = [m for m in args.methods.split(",") if m in classes and m in cfg.estimators]
    ours = {m: instantiate(cfg.estimators[m]) for m in methods}
    tpm = {k: int(v) for k, v in (x.split("=") for x in args.trials_per_method.split(",") if x)}
    splits, sizes = args.splits.split(","), [int(s) for s in args.sizes.split(",")]
    rows, times, errors, cache = [], defaultdict(lambda: defaultdict(list)), {}, {}
    commit = subprocess.run(["git", "-C", args.benchpred_path, "rev-parse", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or None
    t_start = time.perf_counter()
    with threadpool_limits(1):
        for name in args.benchmarks.split(","):
            res = instantiate(cfg.benchmark_prediction.benchmarks[name])
            S = np.asarray(res.success, dtype=np.float64)
            # their get_scores() hands the methods float32 0/1 matrices without missing cells
            S32 = np.nan_to_num(S, nan=0.0).astype(np.float32)
            acc, n_items = np.nanmean(S, axis=1), S.shape[1]
            cache.clear()  # keys hold LLM positions, which repeat across benchmarks of equal size
            todo = [(sp, sz, t) for sp in splits for sz in sizes if sz < n_items for t in range(args.trials)]
            for split, size, trial in tqdm(todo, desc=f"{name} {S.shape}", file=sys.stderr, mininterval=5):
                src, tgt = model_split(acc, split, trial)
                core = np.sort(np.random.default_rng(10_000 + trial).choice(n_items, size=size, replace=False))
                for m in methods:
                    if trial >= tpm.get(m, args.trials):
                        continue
                    selects = bool(ours[m].selects_core)
                    p_o, c_o, s_o = run_ours(ours[m], S, res.llms, src, tgt, core, size, trial)
                    times[m]["ours"].append(s_o)
                    row = {"benchmark": name, "split": split, "size": size, "method": m, "eg_theirs": None,
                           "eg_ours": 100 * float(np.mean(np.abs(p_o - acc[tgt]))), "abs_diff": None,
                           "overlap": None}
                    try:
                        p_t, c_t, s_t = run_theirs(classes[m], S32, src, tgt, core, size, trial, selects, cache)
                    except Exception as e:  # noqa: BLE001 - recorded; one failing fit must not stop the run
                        errors.setdefault(m, f"{name}/{split}/{trial}: {type(e).__name__}: {e}")
                    else:
                        if s_t is not None:
                            times[m]["theirs"].append(s_t)
                        row["eg_theirs"] = 100 * float(np.mean(np.abs(p_t - acc[tgt])))
                        row["abs_diff"] = 100 * float(np.mean(np.abs(p_t - p_o)))
                        if selects:  # Jaccard overlap of the two self-selected cores
                            row["overlap"] = len(set(c_t) & set(c_o)) / len(set(c_t) | set(c_o))
                    rows.append(row)
    out = {"issue": 5, "benchpred_path": os.path.abspath(args.benchpred_path), "benchpred_commit": commit,
           "benchmarks": args.benchmarks.split(","), "splits": splits, "sizes": sizes, "trials": args.trials,
           "trials_per_method": tpm, "methods": methods, "skipped": skipped, "errors_theirs": errors,
           "core_set": {m: ("own selection on both sides (see core_overlap)" if ours[m].selects_core
                            else "ours (harness seed 10000 + trial), injected into theirs") for m in methods},
           **summarise(rows),
           "seconds_per_trial": {m: {k: round(float(np.mean(v)), 3) for k, v in d.items()} | {
               "theirs_fits": len(d.get("theirs", []))} for m, d in times.items()},
           "wall_s": round(time.perf_counter() - t_start, 1)}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
