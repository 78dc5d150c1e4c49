"""Choose the latent assessor's settings on validation LLMs only; prints JSON.

For each seed, the pipeline of ``python train.py assessor=latent`` prepares the split (same data,
features, reference set as ``benchmarks/latent_quality.py``); the validation LLMs' validation prompts
are cut in two halves (fixed per seed):

* half A is what the assessor is fitted with as ``validation`` (early stopping, Platt scaling);
* half B is scored: each validation LLM enters through its posterior from its reference answers,
  as a test LLM does, and gets its AUC and ECE on B (``assessors.metrics.evaluate``).

Test LLMs and test prompts are never read. Each config is a list of Hydra overrides of
``assessor.*``; posterior-time variants (no Platt scaling, no residual, a wider ability prior) are
scored from the same fit. Results are cached per (config, seed) in ``--cache`` so an interrupted
search resumes.

    python benchmarks/latent_validation_search.py --seeds 0 1 2 --configs default dims8 \
        --cache outputs/latent_search.json
    python benchmarks/latent_validation_search.py --list          # the named configs
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's package, not another installed copy

from benchmarks.latent_quality import compose  # noqa: E402

#: Named configs: Hydra overrides of the latent assessor.
CONFIGS = {
    "default": [],
    "dims2": ["assessor.dims=2"],
    "dims8": ["assessor.dims=8"],
    "dims16": ["assessor.dims=16"],
    "members6": ["assessor.n_members=6"],
    "members10": ["assessor.n_members=10"],
    "auc": ["assessor.monitor=auc"],
    "h256": ["assessor.hidden_sizes=[256]"],
    "h512": ["assessor.hidden_sizes=[512]"],
    "h256x2": ["assessor.hidden_sizes=[256,128]"],
    "h64": ["assessor.hidden_sizes=[64]"],
    "drop03": ["assessor.dropout=0.3"],
    "drop05": ["assessor.dropout=0.5"],
    "wd1e-2": ["assessor.weight_decay=0.01"],
    "wd1e-1": ["assessor.weight_decay=0.1"],
    "lr1e-3": ["assessor.lr=0.001"],
    "prior0.3": ["assessor.prior_var=0.3"],
    "prior3": ["assessor.prior_var=3.0"],
    "patience10": ["assessor.patience=10"],
    "batch16": ["assessor.batch_prompts=16"],
    "batch256": ["assessor.batch_prompts=256"],
    "h256x2_m6": ["assessor.hidden_sizes=[256,128]", "assessor.n_members=6"],
    "h64_m6": ["assessor.hidden_sizes=[64]", "assessor.n_members=6"],
    "h64_m6_drop03": ["assessor.hidden_sizes=[64]", "assessor.n_members=6", "assessor.dropout=0.3"],
    "h256x2_m6_nores": ["assessor.hidden_sizes=[256,128]", "assessor.n_members=6", "assessor.residual=false"],
    "item_neighbours0": ["assessor.item_neighbours=0"],
    "item_neighbours3": ["assessor.item_neighbours=3"],
    "item_neighbours5": ["assessor.item_neighbours=5"],
    "item_neighbours10": ["assessor.item_neighbours=10"],
    "item_neighbours20": ["assessor.item_neighbours=20"],
}

#: Posterior-time variants scored from every fit: (name, attribute changes, prior scale).
VARIANTS = {
    "as_fitted": ({}, 1.0),
    "no_platt": ({"calibration_": (1.0, 0.0)}, 1.0),
    "no_residual": ({"residual": False}, 1.0),
    "residual_gain0": ({"residual_min_gain": 0.0}, 1.0),
    "residual_gain3": ({"residual_min_gain": 3.0}, 1.0),
    "prior_x2": ({}, 2.0),
    "prior_x0.5": ({}, 0.5),
}


def halves(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The validation prompts' halves A (fit) and B (score), fixed per seed."""
    perm = np.random.default_rng(10_000 + seed).permutation(n)
    return np.sort(perm[: n // 2]), np.sort(perm[n // 2:])


def score(S: np.ndarray, P: np.ndarray) -> dict[str, float]:
    """Mean per-LLM AUC, ECE and log loss of predictions ``P`` against ``S`` (k, m)."""
    from assessors.metrics import evaluate

    rows = []
    for y, p in zip(S, P):
        keep = np.isfinite(y)
        rows.append(evaluate(y[keep], p[keep]))
    return {k: round(float(np.nanmean([r[k] for r in rows])), 5) for k in ("auc", "ece", "log_loss")}


def variant(model, changes: dict, prior_scale: float):
    """A copy of the fitted ``model`` with posterior-time changes (no refit)."""
    from assessors.core.posterior import GaussianPrior

    m = copy.copy(model)
    for k, v in changes.items():
        setattr(m, k, v)
    if prior_scale != 1.0:
        m.priors_ = [GaussianPrior(p.mean, p.cov * prior_scale) for p in model.priors_]
    return m


def run_config(prep, seed: int, ref, overrides: list[str]) -> dict:
    from hydra.utils import instantiate

    ref_idx, ref_ids = ref
    cfg = compose([f"seed={seed}", "assessor=latent", "tracking=none", "plots=false", *overrides])
    X_val, S_val, R_val = prep.validation(ref_ids)
    A, B = halves(S_val.shape[1], seed)
    model = instantiate(cfg.assessor)
    t0 = time.process_time()
    model.fit(prep.X["train"], prep.S("train", "train"), ref_idx, validation=(X_val[A], S_val[:, A], R_val))
    out = {"fit_cpu_s": round(time.process_time() - t0, 1),
           "epochs": [(m["best_epoch"], m["epochs"]) for m in model.members_]}
    for name, (changes, scale) in VARIANTS.items():
        P = variant(model, changes, scale).predict_proba(X_val[B], R_val)
        out[name] = score(S_val[:, B], P)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--configs", nargs="+", default=["default"], help="names from CONFIGS, or name=ov1,ov2")
    ap.add_argument("--cache", type=Path, default=ROOT / "outputs" / "latent_validation_search.json")
    ap.add_argument("--list", action="store_true", help="print the named configs and exit")
    a = ap.parse_args()
    if a.list:
        print(json.dumps({"configs": CONFIGS, "variants": list(VARIANTS)}, indent=2))
        return
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from hydra.utils import instantiate

    from assessors.tasks.prepare import fit_selector, prepare

    configs = {}
    for c in a.configs:
        name, _, ovs = c.partition("=")
        configs[name] = CONFIGS[name] if not ovs else ovs.split(",")
    cache = json.loads(a.cache.read_text()) if a.cache.exists() else {}
    for seed in a.seeds:
        todo = [n for n in configs if f"{n}|{seed}" not in cache]
        if not todo:
            continue
        cfg = compose([f"seed={seed}", "assessor=latent", "tracking=none", "plots=false"])
        prep = prepare(cfg)
        sel = fit_selector(instantiate(cfg.selector), prep)
        ref = (np.asarray(sel.reference_index_), sel.reference_ids_)
        for name in todo:
            res = run_config(prep, seed, ref, configs[name])
            cache[f"{name}|{seed}"] = {"overrides": configs[name], **res}
            a.cache.parent.mkdir(parents=True, exist_ok=True)
            tmp = a.cache.with_suffix(".tmp")
            tmp.write_text(json.dumps(cache, indent=1))
            tmp.replace(a.cache)  # atomic: an interrupted search resumes from here
            print(f"{name} seed {seed}: {res['as_fitted']} ({res['fit_cpu_s']} CPU-s)", file=sys.stderr, flush=True)
    table = {}
    for name in configs:
        runs = [cache.get(f"{name}|{s}") for s in a.seeds]
        if any(r is None for r in runs):
            continue
        table[name] = {"overrides": configs[name], "fit_cpu_s": round(float(np.mean([r["fit_cpu_s"] for r in runs])), 1)}
        for v in VARIANTS:
            table[name][v] = {k: round(float(np.mean([r[v][k] for r in runs])), 4) for k in ("auc", "ece", "log_loss")}
    print(json.dumps({"seeds": a.seeds, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                      "machine": f"{os.cpu_count()} cores, shared", "table": table}, indent=2))


if __name__ == "__main__":
    main()
