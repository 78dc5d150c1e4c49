"""Streaming training of the latent-ability assessor on semi-synthetic LLMs; prints JSON.

1. Item bank: a latent assessor (one member, no residual) fitted on the default real data (all
   LLMs, the 6,517 BBH+MuSR prompts, MiniLM features from the cache) gives every prompt's item
   parameters and the ability prior. Kept with the features in ``--work`` and reused.
2. For each ``--llms N``: ``N`` new LLMs drawn from that prior answer every prompt
   (:func:`assessors.data.semisynthetic.generate`, uint8 on disk, timed).
3. A fresh subprocess trains :class:`StreamingLatentAssessor` from the memory-mapped answers, so its
   peak RSS (``ru_maxrss``) is its own. It prints wall and CPU seconds, epochs, the held-out log
   loss against the generator's own (the loss of the true probabilities on the same pairs), and
   the correlation of each LLM's fitted and true mean success probability on the held-out prompts.

Usage: python benchmarks/scale_latent.py [--llms 1000 10000] [--max-epochs 60] [--bank-only] [--marginals]
       [--strategy ddp_spawn --devices 2]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's package, not another installed copy
WORK = Path.home() / ".cache" / "assessors" / "scale_latent"


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def build_bank(work: Path, seed: int = 0) -> dict:
    """Fit the latent assessor on the default real data; write ``bank.npz`` and ``features.npy``."""
    from hydra import compose, initialize_config_dir
    from hydra.utils import instantiate

    from assessors.core.latent import LatentAssessor
    from assessors.core.latent_bank import item_bank

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("train", overrides=["tracking=none", f"paths.data_dir={os.environ.get('ASSESSORS_DATA_DIR', ROOT.parent / 'shared' / 'data')}"])
    results = instantiate(cfg.data)
    prompts = results.instances["prompt"].astype(str).tolist()
    t0 = time.perf_counter()
    featurizer = instantiate(cfg.features)
    X = featurizer.fit(prompts).transform(prompts)
    feat_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    ref = np.sort(rng.choice(len(prompts), 100, replace=False))
    model = LatentAssessor(n_members=1, residual=False, seed=seed).fit(X, results.success, ref)
    bank = item_bank(model, X, results.instances.index, S=results.success)
    work.mkdir(parents=True, exist_ok=True)
    np.save(work / "features.npy", X.astype(np.float32))
    bank.save(work / "bank.npz")
    acc = np.nanmean(results.success, axis=1)
    return {"stage": "bank", "data": results.name, "n_llms": len(results.llms), "n_prompts": len(prompts),
            "features_s": round(feat_s, 1), "fit_s": round(time.perf_counter() - t0, 1),
            "epochs": model.members_[0]["epochs"], "real_llm_acc_sd": round(float(acc.std()), 4)}


def marginals(work: Path, n_llms: int = 1000, seed: int = 0) -> dict:
    """Per-LLM and per-item accuracy of ``n_llms`` generated LLMs against the real default data."""
    import tempfile

    from assessors.data.loaders.open_llm_leaderboard_v2 import load_open_llm_leaderboard_v2
    from assessors.data.semisynthetic import ItemBank, generate, open_answers

    real = load_open_llm_leaderboard_v2(root=os.environ.get("ASSESSORS_DATA_DIR", ROOT.parent / "shared" / "data"))
    bank = ItemBank.load(work / "bank.npz")
    S = real.success[:, real.instance_index(list(bank.instance_ids))]
    with tempfile.TemporaryDirectory() as tmp:
        G = open_answers(generate(bank, n_llms, Path(tmp) / "g", seed=seed)).T.astype(np.float64)
    out = {"stage": "marginals", "real_llms": len(real.llms), "generated_llms": n_llms}
    for name, M in (("real", S), ("generated", G)):
        acc, item = np.nanmean(M, 1), np.nanmean(M, 0)
        out[name] = {"llm_acc_q10_q50_q90": np.round(np.quantile(acc, [0.1, 0.5, 0.9]), 3).tolist(),
                     "llm_acc_sd": round(float(acc.std()), 3), "item_acc_mean": round(float(item.mean()), 3),
                     "item_acc_sd": round(float(item.std()), 3)}
    ri, gi = np.nanmean(S, 0), G.mean(0)
    out["item_acc_corr"] = round(float(np.corrcoef(ri, gi)[0, 1]), 3)
    out["item_acc_mean_abs_gap"] = round(float(np.abs(ri - gi).mean()), 3)
    return out


def train(data_dir: Path, features: Path, bank_path: Path, max_epochs: int, batch_prompts: int, seed: int,
          strategy: str = "auto", devices: int = 1) -> dict:
    """One streaming fit (run in a subprocess for its own peak RSS)."""
    from assessors.core.latent_stream import StreamingLatentAssessor
    from assessors.data.semisynthetic import ItemBank, open_answers
    from assessors.irt_math import sigmoid

    X = np.load(features)
    A = open_answers(data_dir)
    t0, c0 = time.perf_counter(), cpu_s()
    model = StreamingLatentAssessor(n_members=1, residual=False, max_epochs=max_epochs, batch_prompts=batch_prompts,
                                    seed=seed, strategy=strategy, devices=devices).fit(X, data_dir, np.arange(100))
    fit_s, fit_cpu = time.perf_counter() - t0, cpu_s() - c0
    # the held-out prompts the fit used, and the generator's own loss on them
    held = np.sort(np.random.default_rng(seed).permutation(len(X))[:int(round(len(X) * 0.1))])
    bank = ItemBank.load(bank_path)
    theta = np.load(data_dir / "theta.npy")
    p_true = sigmoid(theta @ bank.a[held].T - bank.b[held])  # (n_llms, h)
    y = np.asarray(A[held]).T.astype(np.float64)
    eps = 1e-9
    oracle = float(-np.mean(y * np.log(p_true + eps) + (1 - y) * np.log(1 - p_true + eps)))
    a, b = model.item_parameters(X[held])
    p_fit = sigmoid(model.members_[0]["theta"] @ a[0].T - b[0])
    member = model.members_[0]
    return {"stage": "train", "n_llms": int(A.shape[1]), "n_prompts": int(A.shape[0]), "train_pairs": int(model.n_pairs_),
            "fit_s": round(fit_s, 1), "fit_cpu_s": round(fit_cpu, 1), "epochs": member["epochs"],
            "best_epoch": member["best_epoch"], "max_epochs": max_epochs, "batch_prompts": batch_prompts,
            "s_per_pair_epoch": fit_s / (model.n_pairs_ * max(member["epochs"], 1)),
            "heldout_loss": round(member["best"], 4), "generator_loss": round(oracle, 4),
            "llm_mean_p_corr": round(float(np.corrcoef(p_fit.mean(1), p_true.mean(1))[0, 1]), 4),
            "item_mean_p_corr": round(float(np.corrcoef(p_fit.mean(0), p_true.mean(0))[0, 1]), 4),
            "strategy": strategy, "devices": devices,
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            # DDP spawn: the largest of the spawned ranks (each holds its own copy of the model)
            "peak_rss_children_mb": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1),
            "answers_mb": round(A.nbytes / 2 ** 20, 1)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llms", type=int, nargs="+", default=[1000])
    ap.add_argument("--max-epochs", type=int, default=60)
    ap.add_argument("--batch-prompts", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--strategy", default="auto", help="Lightning strategy: auto (one process) or ddp_spawn")
    ap.add_argument("--devices", type=int, default=1, help="DDP processes (with --strategy ddp_spawn)")
    ap.add_argument("--work", type=Path, default=WORK)
    ap.add_argument("--bank-only", action="store_true", help="(re)build the item bank and stop")
    ap.add_argument("--marginals", action="store_true", help="compare 1,000 generated LLMs with the real data and stop")
    ap.add_argument("--train", type=Path, help=argparse.SUPPRESS)  # internal: one fit in this process
    args = ap.parse_args()
    if args.train:
        print(json.dumps(train(args.train, args.work / "features.npy", args.work / "bank.npz", args.max_epochs,
                               args.batch_prompts, args.seed, args.strategy, args.devices)), flush=True)
        return
    if args.marginals:
        print(json.dumps(marginals(args.work, seed=args.seed)), flush=True)
        return
    if args.bank_only or not (args.work / "bank.npz").exists():
        print(json.dumps(build_bank(args.work, args.seed)), flush=True)
        if args.bank_only:
            return
    from assessors.data.semisynthetic import ItemBank, generate

    bank = ItemBank.load(args.work / "bank.npz")
    for n in args.llms:
        out = args.work / f"synth-{bank.digest()}-{n}-{args.seed}"
        t0 = time.perf_counter()
        generate(bank, n, out, seed=args.seed)
        print(json.dumps({"stage": "generate", "n_llms": n, "seconds": round(time.perf_counter() - t0, 1),
                          "bytes": (out / "answers.npy").stat().st_size}), flush=True)
        cmd = [sys.executable, __file__, "--train", str(out), "--work", str(args.work), "--max-epochs",
               str(args.max_epochs), "--batch-prompts", str(args.batch_prompts), "--seed", str(args.seed),
               "--strategy", args.strategy, "--devices", str(args.devices)]
        subprocess.run(cmd, check=True)


if __name__ == "__main__":
    main()
