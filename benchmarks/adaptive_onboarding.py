"""Offline evaluation of adaptive onboarding: simulate new LLMs from their known results; prints JSON.

Per seed, the pipeline of ``python train.py assessor=latent <overrides>`` prepares the split and
fits the latent assessor once. Each held-out test LLM is then "onboarded" from the training prompts
(the candidate pool), its answers read from the shared data, with every question strategy:

* ``random``: the paper's random selector (``RandomSelector``, size n; n=100 is the reference set
  ``train.py`` uses);
* ``kmeans_irt`` / ``kmeans_embeddings``: the paper's clustering selectors (conf/selector), size n;
* ``adaptive_<criterion>[_explore<e>][_strata<k>]``: :class:`AdaptiveSelector` one question at a time.

For every number of questions n, the posterior from those answers predicts the test prompts:
mean test AUC over test LLMs, and the mean absolute error of the predicted accuracy on the test
prompts (posterior-predictive mean over them: ``mae_model``; raw mean of the asked answers:
``mae_raw``). Nothing is tuned on the test LLMs.

    nice python benchmarks/adaptive_onboarding.py --seeds 0
    nice python benchmarks/adaptive_onboarding.py --seeds 0 -- llm_split=frontier
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SIZES = (5, 10, 20, 30, 50, 100, 200)
MODEL_CACHE = os.environ.get("ADAPTIVE_BENCH_MODEL_CACHE")  # a directory: reuse fitted models across runs
# criterion, explore, strata: greedy variants, then the stratified default (conf/onboarding/adaptive)
ADAPTIVE = (("d_optimal", 0.0, 0), ("mixed", 0.0, 0), ("mixed", 0.25, 0), ("accuracy", 0.0, 0),
            ("d_optimal", 0.0, 20), ("target", 0.0, 20), ("mixed", 0.0, 20))


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


def run_seed(seed: int, overrides: list[str], sizes, strategies) -> dict:
    from assessors.onboarding.adaptive import AdaptiveSelector

    cfg, prep, model, fit_s = fitted(seed, overrides)
    X_pool, X_te = prep.X["train"], prep.X["test"]
    Y_pool = prep.S("test", "train")  # the test LLMs' answers on the candidate pool
    S_te = prep.S("test", "test")
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
            sel = AdaptiveSelector(criterion=crit, explore=float(explore), strata=int(strata), budget=max(sizes),
                                   seed=seed).fit(model, X_pool)
            seqs = []
            for k in range(len(S_te)):
                asked, y = sel.simulate(lambda j: Y_pool[k, j], n_max=max(sizes))
                seqs.append((asked, y))
            for n in sizes:
                curve[n] = metrics(model, [X_pool[a[:n]] for a, _ in seqs], [y[:n] for _, y in seqs], X_te, S_te)
            name = f"adaptive_{crit}" + (f"_explore{explore}" if float(explore) else "") + \
                (f"_strata{strata}" if int(strata) else "")
        out["curves"][name] = curve
        print(f"seed {seed} {name}: {time.perf_counter() - t0:.0f}s "
              + " ".join(f"n={n}: auc {c['auc']:.4f} mae {c['mae_model']:.4f}" for n, c in curve.items()),
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
    for ax, lab in zip(axes, ("mean test AUC", "accuracy MAE on test prompts")):
        ax.set_xscale("log")
        ax.set_xlabel("questions asked")
        ax.set_ylabel(lab)
    axes[0].legend(fontsize=7)
    fig.suptitle(" ".join(summary["overrides"]) or "default split", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def table(summary) -> str:
    """Markdown: mean test AUC / accuracy MAE (posterior predictive) per strategy and number of questions."""
    mean = summary["mean_over_seeds"]
    sizes = list(next(iter(mean.values())).keys())
    lines = ["| strategy | " + " | ".join(f"n={n}" for n in sizes) + " |", "|---" * (len(sizes) + 1) + "|"]
    for name, curve in mean.items():
        lines.append(f"| {name} | " + " | ".join(f"{curve[n]['auc']:.4f} / {curve[n]['mae_model']:.4f}" for n in sizes) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    ap.add_argument("--strategies", nargs="+",
                    default=["random", "kmeans_irt", "kmeans_embeddings"] + [f"{c}:{e}:{k}" for c, e, k in ADAPTIVE],
                    help="fixed selectors by name, adaptive ones as criterion:explore[:strata]")
    ap.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    ap.add_argument("--figure", type=Path, default=None)
    ap.add_argument("--from-json", type=Path, default=None,
                    help="re-render the table (and --figure) of an earlier --out file instead of running")
    ap.add_argument("overrides", nargs="*", help="Hydra overrides of train.yaml (after --)")
    a = ap.parse_args()
    if a.from_json:
        summary = json.loads(a.from_json.read_text())
        if a.figure:
            plot(summary, a.figure)
        print(table(summary))
        return
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    runs = [run_seed(s, a.overrides, a.sizes, a.strategies) for s in a.seeds]
    names = list(runs[0]["curves"])
    summary = {
        "overrides": a.overrides,
        "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                 text=True).stdout.strip(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{os.cpu_count()} cores, shared",
        "mean_over_seeds": {name: {n: {key: round(float(np.mean([r["curves"][name][n][key] for r in runs])), 4)
                                       for key in ("auc", "mae_model", "mae_raw")} for n in a.sizes} for name in names},
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
