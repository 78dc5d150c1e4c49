"""Offline evaluation of adaptive onboarding: simulate new LLMs from their known results; prints JSON.

Per seed, the pipeline of ``python train.py assessor=latent <overrides>`` prepares the split and
fits the latent assessor once. Each held-out test LLM is then "onboarded" from the training prompts
(the candidate pool), its answers read from the shared data, with every question strategy:

* ``random``: the paper's random selector (``RandomSelector``, size n; n=100 is the reference set
  ``train.py`` uses);
* ``kmeans_irt`` / ``kmeans_embeddings``: the paper's clustering selectors (conf/selector), size n;
* ``adaptive_<criterion>[_explore<e>][_strata<k>]``: :class:`AdaptiveSelector` one question at a time,
  with the test prompts as its target (``adaptive_random`` asks the seeded random order: every step is
  a random draw).

For every number of questions n, the posterior from those answers predicts the test prompts:
mean test AUC over test LLMs, and the mean absolute error of the predicted accuracy on the test
prompts (posterior-predictive mean over them: ``mae_model``; raw mean of the asked answers:
``mae_raw``). Adaptive sequences also report the design-unbiased estimate from their random steps
(``mae_design``, its 90% interval's coverage ``cover_design``, its mean bias ``bias_design``) and the
composite (``mae_composite``, ``cover_composite``); ``cover_model`` is the model band's coverage of
the realised accuracy and ``sd_model`` its mean standard deviation. Nothing is tuned on the test
LLMs: ``--llms val`` runs the validation LLMs (target: the validation prompts) for choosing settings.

    nice python benchmarks/adaptive_onboarding.py --seeds 0
    nice python benchmarks/adaptive_onboarding.py --seeds 0 -- llm_split=frontier
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SIZES = (5, 10, 20, 50, 100)
MODEL_CACHE = os.environ.get("ADAPTIVE_BENCH_MODEL_CACHE")  # a directory: reuse fitted models across runs
# criterion, explore, strata: all-random (design baseline), the stratified default without and with
# exploration (conf/onboarding/adaptive)
ADAPTIVE = (("random", 0.0, 0), ("mixed", 0.0, 20), ("mixed", 0.25, 20), ("mixed", 0.5, 20))
BIAS_SD = float(os.environ.get("ADAPTIVE_BENCH_BIAS_SD", "0.03"))  # the composite's bias_sd (conf default)
KEYS = ("auc", "mae_model", "mae_raw", "sd_model", "cover_model", "mae_design", "bias_design", "cover_design",
        "n_random", "mae_composite", "cover_composite")


def compose(overrides):
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        return hydra_compose("train", overrides=overrides)


def metrics(model, X_asked_list, Y_list, X_te, S_te) -> dict:
    """Mean AUC / accuracy MAE over test LLMs; ``X_asked_list[k]``, ``Y_list[k]`` per LLM."""
    from assessors.metrics import auc

    aucs, mae_m, mae_r = [], [], []
    for k in range(len(S_te)):
        post = model.posterior(X_asked_list[k], Y_list[k][None, :])
        p, _ = model.predict_posterior(X_te, post)
        obs = np.isfinite(S_te[k])
        aucs.append(auc(S_te[k][obs], p[0][obs]))
        real = float(S_te[k][obs].mean())
        mae_m.append(abs(float(p[0][obs].mean()) - real))
        mae_r.append(abs(float(np.nanmean(Y_list[k])) - real) if np.isfinite(Y_list[k]).any() else np.nan)
    return {"auc": float(np.nanmean(aucs)), "mae_model": float(np.mean(mae_m)), "mae_raw": float(np.nanmean(mae_r)),
            "auc_per_llm": [round(float(a), 4) for a in aucs]}


def _prefix(y: np.ndarray, n: int) -> int:
    """Length of the history holding the first ``n`` answers (skipped prompts stay in place)."""
    done = np.cumsum(np.isfinite(y))
    return int(np.searchsorted(done, n) + 1) if done[-1] >= n else len(y)


def adaptive_metrics(sels, seqs, n: int, S_te) -> dict:
    """Like :func:`metrics`, plus the model, design and composite estimates of :meth:`AdaptiveSelector.estimate`
    (with the test prompts as the selectors' target) against each LLM's realised test accuracy; ``sels[k]``
    is LLM k's fitted selector."""
    hist = [(a[:_prefix(y, n)], y[:_prefix(y, n)]) for a, y in seqs]
    ok = [np.isfinite(y) for _, y in hist]
    X_pool = sels[0].X_pool_
    out = metrics(sels[0].assessor_, [X_pool[a[m]] for (a, _), m in zip(hist, ok)],
                  [y[m] for (_, y), m in zip(hist, ok)], sels[0].X_target_, S_te)
    rows = []
    for k, (a, y) in enumerate(hist):
        real = float(np.nanmean(S_te[k]))
        e = sels[k].estimate(sels[k].posterior(a[ok[k]], y[ok[k]]), asked=a, answers=y)
        d = e["design_accuracy"]
        rows.append({"sd_model": e["model_sd"], "cover_model": e["model_low"] <= real <= e["model_high"],
                     "mae_design": np.nan if d is None else abs(d - real),
                     "bias_design": np.nan if d is None else d - real,
                     "cover_design": np.nan if d is None else float(e["design_low"] <= real <= e["design_high"]),
                     "n_random": e["n_random"], "mae_composite": abs(e["composite_accuracy"] - real),
                     "cover_composite": e["composite_low"] <= real <= e["composite_high"],
                     "model_err": e["model_accuracy"] - real})
    for key in rows[0]:
        vals = np.asarray([r[key] for r in rows], dtype=float)
        out[key] = float(np.nanmean(vals)) if np.isfinite(vals).any() else None
    out["model_err_per_llm"] = [round(r["model_err"], 4) for r in rows]
    return out


def fixed_selector(cfg, name: str, size: int, prep):
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    from assessors.selection.base import RandomSelector

    S_tr = prep.S("train", "train")
    if name == "random":
        sel = RandomSelector(size=size, seed=cfg.seed)
    else:
        node = OmegaConf.load(ROOT / "conf" / "selector" / f"{name}.yaml")
        node.seed = cfg.seed
        node.size = size
        if "space" in node and "seed" in node.space:
            node.space.seed = cfg.seed
        if "space" in node and "cache_dir" in node.space:
            node.space.cache_dir = str(Path(cfg.paths.cache_dir) / "selection")
        sel = instantiate(node)
    sel.fit(S_tr, prep.inst["train"], prep.X["train"])
    return np.asarray(sel.reference_index_)


def fitted(seed: int, overrides: list[str]):
    """``(cfg, prep, latent assessor, seconds)`` of ``train.py assessor=latent`` for one seed (model cached
    in ``$ADAPTIVE_BENCH_MODEL_CACHE`` when set)."""
    import hashlib
    import pickle

    from assessors.tasks.prepare import fit_generic, prepare

    cfg = compose([f"seed={seed}", "assessor=latent", "tracking=none", "plots=false", *overrides])
    t0 = time.perf_counter()
    prep = prepare(cfg)
    cache = None
    if MODEL_CACHE:
        key = hashlib.sha256(json.dumps([seed, overrides]).encode()).hexdigest()[:12]
        cache = Path(MODEL_CACHE) / f"latent_{key}.pkl"
        if cache.exists():
            return cfg, prep, pickle.loads(cache.read_bytes()), time.perf_counter() - t0
    model, _ = fit_generic(cfg, prep)
    if cache is not None:
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_bytes(pickle.dumps(model))
    return cfg, prep, model, time.perf_counter() - t0


def run_seed(seed: int, overrides: list[str], sizes, strategies, llms: str = "test") -> dict:
    from assessors.onboarding.adaptive import AdaptiveSelector

    cfg, prep, model, fit_s = fitted(seed, overrides)
    X_pool, X_te = prep.X["train"], prep.X[llms]
    Y_pool = prep.S(llms, "train")  # the onboarded LLMs' answers on the candidate pool
    S_te = prep.S(llms, llms)  # ... and on their target prompts (test, or validation with --llms val)
    out = {"seed": seed, "n_pool": len(X_pool), "n_test_prompts": len(X_te), "n_test_llms": len(S_te),
           "prepare_and_fit_s": round(fit_s, 1), "curves": {}}
    for name in strategies:
        t0 = time.perf_counter()
        curve = {}
        if name in ("random", "kmeans_irt", "kmeans_embeddings"):
            for n in sizes:
                idx = fixed_selector(cfg, name, n, prep)
                curve[n] = metrics(model, [X_pool[idx]] * len(S_te), [Y_pool[k, idx] for k in range(len(S_te))], X_te, S_te)
        else:
            crit, explore, strata = (name.split(":") + ["0"])[:3]
            # one selector seed per LLM: each LLM's random draws are its own (with one seed for all, the
            # design errors of the LLMs share the same few random prompts and do not average out)
            # (the strata, a KMeans fit, are the split seed's for all: only the random order differs)
            base = AdaptiveSelector(criterion=crit, explore=float(explore), strata=int(strata), budget=max(sizes),
                                    seed=seed, bias_sd=BIAS_SD).fit(model, X_pool, X_te)
            sels, seqs, parts = [], [], model.prompt_parts(X_te)
            for k in range(len(S_te)):
                sel = copy.copy(base)
                sel.memo_ = {"target_parts": parts}  # the target's item parameters, computed once
                sel.order_ = np.random.default_rng(1000 * seed + k).permutation(len(X_pool))
                sels.append(sel)
                seqs.append(sel.simulate(lambda j: Y_pool[k, j], n_max=max(sizes), keep_skipped=True))
            for n in sizes:
                curve[n] = adaptive_metrics(sels, seqs, n, S_te)
            for sel in sels:
                sel.memo_.clear()
            name = f"adaptive_{crit}" + (f"_explore{explore}" if float(explore) else "") + \
                (f"_strata{strata}" if int(strata) else "")
        out["curves"][name] = curve
        print(f"seed {seed} {name}: {time.perf_counter() - t0:.0f}s "
              + " ".join(f"n={n}: auc {c['auc']:.4f} mae {c['mae_model']:.4f}/{c.get('mae_design') or np.nan:.4f}"
                       for n, c in curve.items()),
              file=sys.stderr, flush=True)
    return out


def _at(curve: dict, n: int) -> dict:
    return curve[n] if n in curve else curve[str(n)]  # int keys in-process, str keys after JSON


def plot(summary, path: Path) -> None:
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for name in summary["runs"][0]["curves"]:
        sizes = sorted(int(n) for n in summary["runs"][0]["curves"][name])
        for ax, key in zip(axes, ("auc", "mae_model")):
            vals = [np.mean([_at(r["curves"][name], n)[key] for r in summary["runs"]]) for n in sizes]
            ax.plot(sizes, vals, marker="o", label=name)
        if _at(summary["runs"][0]["curves"][name], sizes[-1]).get("mae_design") is not None:
            vals = [np.nanmean([_at(r["curves"][name], n).get("mae_design") or np.nan for r in summary["runs"]])
                    for n in sizes]
            axes[1].plot(sizes, vals, marker="x", linestyle="--", label=f"{name} (design)")
    for ax, lab in zip(axes, ("mean test AUC", "accuracy MAE on test prompts")):
        ax.set_xscale("log")
        ax.set_xlabel("questions asked")
        ax.set_ylabel(lab)
    axes[1].set_title("solid: model estimate, dashed: design estimate", fontsize=8)
    axes[0].legend(fontsize=7)
    axes[1].legend(fontsize=6)
    seeds = sorted({r["seed"] for r in summary["runs"]})
    fig.suptitle(f"{' '.join(summary['overrides']) or 'default split'}: mean over seeds {seeds}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def _cell(c: dict, keys) -> str:
    return " / ".join("-" if c.get(k) is None else f"{c[k]:.4f}" for k in keys)


def table(summary) -> str:
    """Markdown: mean test AUC / accuracy MAE (posterior predictive) per strategy and number of questions,
    then the design and composite estimates (MAE / 90% coverage) of the adaptive strategies."""
    mean = summary["mean_over_seeds"]
    sizes = list(next(iter(mean.values())).keys())
    head = ["| strategy | " + " | ".join(f"n={n}" for n in sizes) + " |", "|---" * (len(sizes) + 1) + "|"]
    lines = ["AUC / MAE (model)", *head]
    lines += [f"| {name} | " + " | ".join(_cell(c[n], ("auc", "mae_model")) for n in sizes) + " |" for name, c in mean.items()]
    for what, keys in (("MAE / coverage / bias (design)", ("mae_design", "cover_design", "bias_design")),
                       ("MAE / coverage (composite)", ("mae_composite", "cover_composite")),
                       ("model sd / model band coverage", ("sd_model", "cover_model"))):
        lines += ["", what, *head]
        lines += [f"| {name} | " + " | ".join(_cell(c[n], keys) for n in sizes) + " |"
                  for name, c in mean.items() if "mae_composite" in c[sizes[0]]]
    return "\n".join(lines)


def _mean(runs, name: str, n: int) -> dict:
    """Mean over seeds of every scalar metric the curve has (None where a seed has none)."""
    cells = [r["curves"][name][n] for r in runs]
    out = {}
    for key in KEYS:
        vals = [c[key] for c in cells if c.get(key) is not None]
        if vals:
            out[key] = round(float(np.mean(vals)), 4)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    ap.add_argument("--strategies", nargs="+",
                    default=["random", "kmeans_irt", "kmeans_embeddings"] + [f"{c}:{e}:{k}" for c, e, k in ADAPTIVE],
                    help="fixed selectors by name, adaptive ones as criterion:explore[:strata]")
    ap.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    ap.add_argument("--figure", type=Path, default=None)
    ap.add_argument("--from-json", type=Path, nargs="+", default=None,
                    help="re-render the table (and --figure) of earlier --out files (their runs pooled: e.g. one "
                         "file per seed) instead of running")
    ap.add_argument("--llms", choices=("test", "val"), default="test",
                    help="onboard the test LLMs (report) or the validation LLMs (choosing settings)")
    ap.add_argument("overrides", nargs="*", help="Hydra overrides of train.yaml (after --)")
    a = ap.parse_args()
    if a.from_json:
        parts = [json.loads(f.read_text()) for f in a.from_json]
        summary = {**parts[0], "runs": [r for p in parts for r in p["runs"]]}
        names, sizes = list(summary["runs"][0]["curves"]), [int(n) for n in summary["runs"][0]["curves"][
            next(iter(summary["runs"][0]["curves"]))]]
        summary["runs"] = [{**r, "curves": {k: {int(n): c for n, c in v.items()} for k, v in r["curves"].items()}}
                           for r in summary["runs"]]
        summary["mean_over_seeds"] = {name: {n: _mean(summary["runs"], name, n) for n in sizes} for name in names}
        if a.figure:
            plot(summary, a.figure)
        print(table(summary))
        return
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    runs = [run_seed(s, a.overrides, a.sizes, a.strategies, a.llms) for s in a.seeds]
    names = list(runs[0]["curves"])
    summary = {
        "overrides": a.overrides, "llms": a.llms, "bias_sd": BIAS_SD,
        "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                 text=True).stdout.strip(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{os.cpu_count()} cores, shared",
        "mean_over_seeds": {name: {n: _mean(runs, name, n) for n in a.sizes} for name in names},
        "runs": runs,
    }
    text = json.dumps(summary, indent=1, default=str)
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(text)
    if a.figure:
        plot(summary, a.figure)
    print(text)


if __name__ == "__main__":
    main()
