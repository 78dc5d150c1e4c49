"""Where an AIPW estimate's variance comes from, per benchmark: the latent proxy's error or Bernoulli noise.

For each target LLM of a split (trials 0..T-1, core of ``n`` items drawn uniformly) the script reports
per-item variances over the benchmark, averaged over targets (all in units of one answer's variance,
so the estimator's variance is each figure times ``(1 - n/N) / n``):

* ``var_y``: ``acc (1 - acc)``, Random-Sampling's.
* ``resid_n``: the variance of ``y - lam f`` with ``f`` the posterior predictive given the ``n`` core
  answers and ``lam`` the variance-optimal coefficient: AIPW's, with the proxy it has at size ``n``.
* ``resid_all``: the same with the posterior given *all* the target's answers (an oracle ability):
  the best the latent model's item parameters allow, however many answers a better posterior had.
* ``floor``: ``mean f_all (1 - f_all)``, the Bernoulli noise if the oracle-ability model were exact.
* ``neyman``: ``(mean sqrt(v))^2`` with ``v`` the oracle residual variance ``f_all (1 - f_all)`` per
  item: an unequal-probability design with ``pi_j`` proportional to ``sqrt(v_j)`` has this variance
  in place of ``mean v`` (the Horvitz-Thompson difference estimator, ignoring the ``pi_j`` cap), if
  the model's ``v`` were right; unattainable, since ``v`` needs the target's answers.
* ``pps_src``: ``mean e^2 / w`` with ``e`` the oracle residuals ``y - lam f_all`` and ``w = pi_j N / n``
  the design the sources allow (``pi_j`` proportional to the sqrt of their mean ``p (1 - p)``, mixed
  with ``uniform_share`` of the uniform design, as ``estimator=aipw_latent_pps`` draws it).

``sqrt(resid / var_y) - 1`` approximates AIPW's EGR against Random-Sampling.

    python benchmarks/estimator_variance_budget.py --benchmarks arc_challenge,qnli --trials 3
"""
from __future__ import annotations

import argparse
import json
import os

import numpy as np
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate
from threadpoolctl import threadpool_limits

from assessors.estimation import harness
from assessors.estimation.benchmark.latent_proxy import LatentProxy


def _resid(y: np.ndarray, f: np.ndarray) -> np.ndarray:
    """Per-target variance of ``y - lam f`` over items, ``lam`` the least-squares slope (k,)."""
    yc, fc = y - y.mean(1, keepdims=True), f - f.mean(1, keepdims=True)
    lam = (yc * fc).sum(1) / np.maximum((fc * fc).sum(1), 1e-12)
    return ((yc - lam[:, None] * fc) ** 2).mean(1)


def budget(S: np.ndarray, split: str, trial: int, n: int, uniform_share: float = 0.25) -> dict:
    """Per-item variance figures (see the module docstring) for one split-trial, targets averaged."""
    acc = np.nanmean(S, 1)
    src, tgt = harness.model_split(acc, split, trial)
    Y = np.nan_to_num(S[tgt], nan=0.0)
    N = S.shape[1]
    core = np.sort(np.random.default_rng(trial).choice(N, n, replace=False))
    proxy = LatentProxy().fit(S[src], None, core)
    f_n = proxy.predict(Y[:, core])
    full = LatentProxy().fit(S[src], None, np.arange(N))
    f_all = full.predict(Y)
    v = f_all * (1 - f_all)
    _, v_src = proxy.population_moments()
    w = (1 - uniform_share) * np.sqrt(v_src) / np.sqrt(v_src).mean() + uniform_share  # pi_j / (n/N)
    yc, fc = Y - Y.mean(1, keepdims=True), f_all - f_all.mean(1, keepdims=True)
    lam = (yc * fc).sum(1, keepdims=True) / np.maximum((fc * fc).sum(1, keepdims=True), 1e-12)
    e = yc - lam * fc
    return {"var_y": float((acc[tgt] * (1 - acc[tgt])).mean()), "resid_n": float(_resid(Y, f_n).mean()),
            "resid_all": float(_resid(Y, f_all).mean()), "floor": float(v.mean()),
            "neyman": float((np.sqrt(v).mean(1) ** 2).mean()), "pps_src": float((e ** 2 / w).mean(1).mean())}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--benchmarks", default="")
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--size", type=int, default=50)
    ap.add_argument("--splits", default="interpolation,extrapolation")
    ap.add_argument("--uniform-share", type=float, default=0.25)
    args = ap.parse_args()
    conf = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "conf")
    with initialize_config_dir(config_dir=os.path.abspath(conf), version_base=None):
        cfg = compose("train", overrides=["experiment=benchmark_prediction"])
    bench = dict(cfg.benchmark_prediction.benchmarks)
    if args.benchmarks:
        bench = {k: bench[k] for k in args.benchmarks.split(",")}
    with threadpool_limits(1):
        for name, c in bench.items():
            S = instantiate(c).success.astype(np.float64)
            for split in args.splits.split(","):
                rows = [budget(S, split, t, args.size, args.uniform_share) for t in range(args.trials)]
                row = {k: round(float(np.mean([r[k] for r in rows])), 4) for k in rows[0]}
                row.update({f"egr_{k}": round(float(np.sqrt(row[k] / row["var_y"]) - 1), 3)
                            for k in ("resid_n", "resid_all", "floor", "neyman", "pps_src")})
                print(json.dumps({"benchmark": name, "split": split, **row}), flush=True)


if __name__ == "__main__":
    main()
