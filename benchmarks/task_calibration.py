"""A held-out task calibrated against known abilities: mean test AUC on its uncalibrated prompts; prints JSON.

For each subtask hold-out (``split=ood_<name>``) and seed, in-process as ``python train.py
assessor=latent``: ``k`` random prompts of the held-out task are answered by the training LLMs (their
real answers); the test LLMs enter as always, by their reference answers on the training tasks; every
method is scored by the mean per-LLM AUC over the test LLMs on the *remaining* held-out prompts.

* ``k0``: the latent model as trained (no calibration);
* ``calibrated``: :class:`~assessors.task_calibration.calibration.TaskCalibration` on the ``k`` prompts;
  ``profiles_only`` / ``correction_only``: its two steps alone;
* ``appended``: the latent model refitted with the ``k`` prompts and answers appended to its training set;
* ``all_train_data_appended``: the "all train data" baseline fitted the same way; ``reference_only``
  (unchanged by calibration answers: the test LLMs never answer them); ``specific`` with ``--specific``;
* ``in_distribution``: the latent model on ``split=random``, scored on its test prompts of the same subtasks.

Nothing here looks at the test LLMs' answers except to score.

    python benchmarks/task_calibration.py --splits ood_logic ood_language --seeds 0 1 2 --k 30

``--methods`` instead compares calibration methods (:data:`METHODS`) on one fit per hold-out and
seed and the OOD sweep's draw (``assessors/tasks/ood_sweep_cell.py``: the first ``k`` of a seeded
permutation are calibrated, the prompts after the first 100 scored), by the mean AUC of the
*validation* LLMs (what a method is chosen on) and of the test LLMs (what is reported):

    python benchmarks/task_calibration.py --methods --splits ood_logic ood_musr --seeds 0 1 --k 30 100
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's package, not another installed copy
sys.path.insert(0, str(ROOT / "benchmarks"))

from latent_quality import compose  # noqa: E402


def mean_auc(S, P) -> float:
    from assessors.metrics import per_llm_auc

    return round(float(np.nanmean(per_llm_auc(S, P))), 4)


def in_distribution(seed: int, groups, overrides) -> float:
    """The latent model on a random split, mean test AUC on its test prompts of the subtasks ``groups``."""
    from assessors.tasks.ood_sweep_cell import in_distribution_by_group

    # the sweep cell's ``grid`` node, without the served predictor (only the raw latent model is reported)
    cfg = compose([f"seed={seed}", "assessor=latent", "tracking=none", "plots=false", "split=random",
                   "+grid.served=false", *overrides])
    rows, _ = in_distribution_by_group(cfg, {"task": list(groups)})
    return round(float(rows.loc[(rows["group"] == "task") & (rows["method"] == "latent"), "auc"].iloc[0]), 4)


def budget_cells(model, X_te, S_known, S_test, R_test, budgets, seed: int, draws: int = 3) -> list[dict]:
    """Calibrated AUC at budgets ``(k prompts, m known LLMs)``: prompts and LLMs chosen by information
    (:mod:`assessors.onboarding.task_design`) against random choices (mean of ``draws``), each scored on
    the held-out task's prompts that were not chosen."""
    from assessors.onboarding.task_design import choose_llms, choose_prompts
    from assessors.task_calibration.calibration import TaskCalibration

    theta = model.training_abilities()[0]

    def score(cal, rows):
        Y = np.full((len(rows), len(X_te)), np.nan)
        Y[:, cal] = S_known[np.ix_(rows, cal)]
        tc = TaskCalibration(model).fit(X_te, Y, rows)
        rest = np.setdiff1d(np.arange(len(X_te)), cal)
        return mean_auc(S_test[:, rest], tc.model_.predict_proba(X_te[rest], R_test))

    out = []
    for k, m in budgets:
        m = min(m, len(theta))
        rng = np.random.default_rng(2000 + seed)
        rand = [score(rng.choice(len(X_te), k, replace=False), rng.choice(len(theta), m, replace=False))
                for _ in range(draws)]
        cal = choose_prompts(X_te, k, seed=seed)
        a, b = (v[0] for v in model.item_parameters(X_te[cal]))
        rows = choose_llms(theta, a, b, m)
        random_llms = rng.choice(len(theta), m, replace=False)
        out.append({"k": k, "m": m, "random": round(float(np.mean(rand)), 4), "random_sd": round(float(np.std(rand)), 4),
                    "designed": score(cal, rows), "designed_prompts_random_llms": score(cal, random_llms)})
    return out


def run_cell(split: str, seed: int, ks: list[int], overrides: list[str], specific: bool, with_id: bool,
             budgets=()) -> dict:
    from hydra.utils import instantiate

    from assessors.task_calibration.calibration import TaskCalibration
    from assessors.tasks.prepare import fit_selector, prepare
    from assessors.tasks.ood_sweep_cell import band_coverage, fit_all_train_data
    from assessors.tasks.train import fit_per_llm

    cfg = compose([f"seed={seed}", "assessor=latent", "tracking=none", "plots=false", f"split={split}", *overrides])
    prep = prepare(cfg)
    selector = fit_selector(instantiate(cfg.selector), prep)
    ref_ids, ref_idx = selector.reference_ids_, np.asarray(selector.reference_index_)
    val = prep.validation(ref_ids)
    X_tr, S_tr, X_te, S_te_all = prep.X["train"], prep.S("train", "train"), prep.X["test"], prep.S("train", "test")
    S_test = prep.S("test", "test")
    R_test = prep.results.matrix(prep.llms["test"], ref_ids)
    t0 = time.perf_counter()
    model = instantiate(cfg.assessor).fit(X_tr, S_tr, ref_idx, validation=val)
    out = {"split": split, "seed": seed, "fit_s": round(time.perf_counter() - t0, 1),
           "n_train_llms": len(prep.llms["train"]), "n_test_llms": len(prep.llms["test"]), "n_task_prompts": len(X_te)}
    X_ref = X_tr[ref_idx]
    ref_only = fit_per_llm(cfg, prep, "reference_only", X_ref, prep.results.instance_index(ref_ids))
    spec = fit_per_llm(cfg, prep, "specific", X_ref, prep.results.instance_index(ref_ids)) if specific else None
    post = model.reference_posterior(R_test)
    rows = np.arange(len(prep.llms["train"]))
    for k in ks:
        cal = np.sort(np.random.default_rng(1000 + seed).choice(len(X_te), k, replace=False))
        rest = np.setdiff1d(np.arange(len(X_te)), cal)
        S_rest, X_rest = S_test[:, rest], X_te[rest]
        cell = {"k": k, "k0": mean_auc(S_rest, model.predict_proba(X_rest, R_test)),
                "reference_only": mean_auc(S_rest, ref_only[:, rest]),
                "band_k0": round(band_coverage(model, X_rest, post, S_rest), 3)}
        if spec is not None:
            cell["specific"] = mean_auc(S_rest, spec[:, rest])
        Y = np.full(S_te_all.shape, np.nan)
        Y[:, cal] = S_te_all[:, cal]
        variants = {"calibrated": {}, "profiles_only": {"scale_grid": (0.0,)},
                    "correction_only": {"augment_profiles": False}}
        for name, kw in variants.items():
            t0 = time.perf_counter()
            tc = TaskCalibration(model, **kw).fit(X_te, Y, rows)
            dt = time.perf_counter() - t0
            cell[name] = mean_auc(S_rest, tc.model_.predict_proba(X_rest, R_test))
            if name == "calibrated":
                cell["calibrate_s"] = round(dt, 3)
                cell["band_calibrated"] = round(band_coverage(tc.model_, X_rest, tc.model_.reference_posterior(R_test),
                                                              S_rest), 3)
                cell["chosen"] = tc.chosen_[0]
        # appending: the k prompts and the training LLMs' answers join the training set
        X_app, S_app = np.vstack([X_tr, X_te[cal]]), np.hstack([S_tr, S_te_all[:, cal]])
        t0 = time.perf_counter()
        appended = instantiate(cfg.assessor).fit(X_app, S_app, ref_idx, validation=val)
        cell["append_fit_s"] = round(time.perf_counter() - t0, 1)
        cell["appended"] = mean_auc(S_rest, appended.predict_proba(X_rest, R_test))
        base = fit_all_train_data(cfg, prep, X_app, S_app)
        cell["all_train_data_appended"] = mean_auc(
            S_rest, base.predict_proba(X_rest, np.zeros((len(prep.llms["test"]), 0), np.float32)))
        best = ["reference_only", "all_train_data_appended"] + (["specific"] if spec is not None else [])
        cell["best_baseline"] = max(cell[b] for b in best)
        out.setdefault("cells", []).append(cell)
    if budgets:
        out["budgets"] = budget_cells(model, X_te, S_te_all, S_test, R_test, budgets, seed)
    if with_id:
        out["in_distribution"] = in_distribution(seed, list(cfg.split.test_groups), overrides)
    return out


#: Calibration methods compared by ``--methods``: TaskCalibration's keyword arguments.
SHORT, LONG = (0.05, 0.1, 0.2), (0.05, 0.1, 0.2, 0.5, 1.0)
METHODS = {"short_lengths": {"length_grid": SHORT}, "long_lengths": {"length_grid": LONG},
           "network_space": {"length_grid": SHORT, "spaces": ("network",)},
           "both_spaces": {"length_grid": SHORT, "spaces": ("prompt", "network")},
           "difficulty_only": {"length_grid": SHORT, "discrimination": False},
           "difficulty_only_long": {"length_grid": LONG, "discrimination": False},
           "long_both_spaces": {"length_grid": LONG, "spaces": ("prompt", "network")}}


def shared_rankers(X, S_known, S_test, sub, cal, scored) -> dict:
    """Mean test AUC of one score shared by every test LLM (what bounds a method that learns only
    difficulty from the known LLMs): the known LLMs' mean answer on each scored prompt (an oracle: it
    reads their answers on the scored prompts), on its subtask's calibrated prompts (an oracle for the
    grouping: it reads the subtask labels), and on its 5 most similar calibrated prompts (the features)."""
    from assessors.features.base import unit_rows

    easy = np.nanmean(S_known[:, cal], 0)
    by_sub = {g: easy[sub[cal] == g].mean() for g in set(sub[cal])}
    U = unit_rows(X)
    near = np.argsort(-(U[scored] @ U[cal].T), 1)[:, :5]
    shared = {"oracle_prompt": np.nanmean(S_known[:, scored], 0),
              "subtask_mean": np.array([by_sub.get(g, easy.mean()) for g in sub[scored]]),
              "nearest_5": easy[near].mean(1)}
    return {name: mean_auc(S_test, np.broadcast_to(p, S_test.shape)) for name, p in shared.items()}


def compare_methods(split: str, seed: int, ks: list[int], overrides: list[str]) -> dict:
    """Every method of :data:`METHODS` at each budget ``k`` on one fit of the latent model: mean AUC of
    the validation and of the test LLMs on the scored prompts, test band coverage, calibration wall time."""
    from assessors.task_calibration.calibration import TaskCalibration
    from assessors.tasks.ood_sweep_cell import band_coverage
    from assessors.tasks.prepare import fit_generic, prepare

    cfg = compose([f"seed={seed}", "assessor=latent", "tracking=none", "plots=false", f"split={split}", *overrides])
    prep = prepare(cfg)
    t0 = time.perf_counter()
    model, ref_ids = fit_generic(cfg, prep)
    out = {"split": split, "seed": seed, "fit_s": round(time.perf_counter() - t0, 1), "load_1min": os.getloadavg()[0]}
    X_te, S_known = prep.X["test"], prep.S("train", "test")
    perm = np.random.default_rng(1000 + seed).permutation(len(X_te))  # the sweep's draw
    scored = np.sort(perm[100:])
    X_sc = X_te[scored]
    llms = {part: (prep.results.matrix(prep.llms[part], prep.inst["test"])[:, scored],
                   prep.results.matrix(prep.llms[part], ref_ids)) for part in ("val", "test")}

    def scores(m) -> dict:
        return {f"{part}_auc": mean_auc(S, m.predict_proba(X_sc, R)) for part, (S, R) in llms.items()}

    S_test, R_test = llms["test"]
    sub = prep.results.instances["subgroup"].astype(str).to_numpy()[prep.results.instance_index(prep.inst["test"])]
    out["rankers"] = {k: shared_rankers(X_te, S_known, S_test, sub, perm[:k], scored) for k in ks}
    out["k0"] = {**scores(model), "band": round(band_coverage(model, X_sc, model.reference_posterior(R_test), S_test), 3)}
    for k in ks:
        cal = np.sort(perm[:k])
        Y = np.full(S_known.shape, np.nan)
        Y[:, cal] = S_known[:, cal]
        for name, kw in METHODS.items():
            t0 = time.perf_counter()
            tc = TaskCalibration(model, **kw).fit(X_te, Y, np.arange(len(S_known)))
            dt = time.perf_counter() - t0
            m = tc.model_
            out[f"{name}@{k}"] = {**scores(m), "band": round(band_coverage(m, X_sc, m.reference_posterior(R_test), S_test), 3),
                                  "calibrate_s": round(dt, 2)}
            print(split, seed, name, k, out[f"{name}@{k}"], file=sys.stderr, flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--splits", nargs="+", default=["ood_logic", "ood_language", "ood_algorithmic", "ood_musr"])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--k", type=int, nargs="+", default=[30])
    ap.add_argument("--specific", action="store_true", help="also the specific assessors (slow)")
    ap.add_argument("--no-in-distribution", action="store_true")
    ap.add_argument("--budgets", nargs="*", default=[], help="k,m pairs: designed against random choice, e.g. 10,10 30,20")
    ap.add_argument("--methods", action="store_true", help="compare calibration methods (METHODS) instead")
    ap.add_argument("--out", type=Path, default=None, help="also append each cell's JSON line here")
    ap.add_argument("overrides", nargs="*", help="Hydra overrides (after --)")
    a = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import subprocess

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    runs = []
    for split in a.splits:
        for seed in a.seeds:
            r = (compare_methods(split, seed, a.k, a.overrides) if a.methods else
                 run_cell(split, seed, a.k, a.overrides, a.specific, not a.no_in_distribution,
                          [tuple(map(int, b.split(","))) for b in a.budgets]))
            runs.append(r)
            if a.out:
                with a.out.open("a") as f:
                    f.write(json.dumps(r, default=str) + "\n")
    print(json.dumps({"commit": commit, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                      "machine": f"{os.cpu_count()} cores, shared", "overrides": a.overrides, "runs": runs},
                     indent=2, default=str))


if __name__ == "__main__":
    main()
