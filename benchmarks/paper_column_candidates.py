"""Each candidate of the paper_generic column's XGBoost grid on the default run: fit time, the one its
validation keeps and test AUC; prints JSON.

The column of ``python train.py`` fits ``conf/classifier/xgboost_depth6.yaml`` (the depth-6 point); the
paper's grid (``conf/classifier/xgboost.yaml``) fits depths 3 and 6 and keeps one by validation win rate.
This fits both on one seed's reference set, in one process, so the fit times are a ratio on shared cores.
``test_auc_at`` is the mean test AUC of the first k trees (what early stopping at k trees would give).

    python benchmarks/paper_column_candidates.py --seed 0
"""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate
from sklearn.base import clone
from sklearn.dummy import DummyClassifier

from assessors.classifiers.grid import ParamGrid
from assessors.core.rows import observed_pairs
from assessors.metrics import per_llm_auc, rank_by_win_rate
from assessors.tasks.prepare import fit_selector, prepare
from assessors.threads import budgeted, fit_threads, thread_limits

CONF = Path(__file__).resolve().parent.parent / "conf"


def seed_args(doc: str):
    """``--seed`` parsed from the command line, and the JSON output started with it and the load."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    return a, {"seed": a.seed, "load_1min_before": os.getloadavg()[0]}


def seed_reference_set(seed: int, overrides: tuple = ()):
    """The default run's config (``train.yaml`` at ``seed`` with ``overrides``), its prepared data, the
    reference ids its selector chooses and their rows among the training prompts."""
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("train", overrides=[f"seed={seed}", *overrides])
    prep = prepare(cfg)
    ref_ids = fit_selector(instantiate(cfg.selector), prep).reference_ids_
    return cfg, prep, ref_ids, pd.Index(prep.inst["train"]).get_indexer(ref_ids)


def row_builder(assessor, X: np.ndarray, S: np.ndarray, ref_idx: np.ndarray):
    """A clone of the generic assessor ``assessor`` fitted with a constant classifier on prompts ``X`` (n, d),
    training LLMs' answers ``S`` (n_llms, n) and reference rows ``ref_idx``: its
    :meth:`~assessors.core.generic.GenericAssessor.pair_rows` are the rows its own fit would build."""
    return clone(assessor).set_params(classifier=ParamGrid(DummyClassifier())).fit(X, S, ref_idx)


def answered(rows: np.ndarray, S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows (n_pairs, width) and labels (n_pairs,) of the answered cells of ``S`` (n_llms, n_prompts),
    taken from ``rows`` (n_llms * n_prompts, width) in ``pair_rows``'s LLM-major order (what fit trains on)."""
    llm_idx, inst_idx, y = observed_pairs(S)
    return rows[llm_idx * S.shape[1] + inst_idx], y


def main() -> None:
    a, out = seed_args(__doc__)
    threads = fit_threads()
    with thread_limits(threads):
        cfg, prep, ref_ids, ref_idx = seed_reference_set(a.seed, ("assessor=paper_generic",))
        paper = instantiate(budgeted(cfg.assessor, threads))  # the paper's grid: depths 3 and 6
        X_tr, S_tr = prep.X["train"], prep.S("train", "train")
        rows_of = row_builder(paper, X_tr, S_tr, ref_idx)
        keep = np.setdiff1d(np.arange(len(X_tr)), ref_idx)  # a reference prompt's row would hold its label
        X, y = answered(rows_of.pair_rows(X_tr[keep], S_tr[:, ref_idx]).to_array(), S_tr[:, keep])
        X_val, S_val, R_val = prep.validation(ref_ids)
        S_te, R_te = prep.S("test", "test"), prep.results.matrix(prep.llms["test"], ref_ids)
        val, test = rows_of.pair_rows(X_val, R_val).to_array(), rows_of.pair_rows(prep.X["test"], R_te).to_array()
        scores = {}
        for name, est in paper.classifier.candidates():
            t0, c0 = time.perf_counter(), time.process_time()
            est = clone(est).fit(X, y)
            row = {"fit_s": round(time.perf_counter() - t0, 1), "fit_cpu_s": round(time.process_time() - c0, 1)}
            scores[name] = pd.Series(per_llm_auc(S_val, est.predict_proba(val)[:, 1].reshape(S_val.shape[0], -1)))
            row["val_auc"] = round(float(scores[name].mean()), 4)
            row["test_auc_at"] = {k: round(float(np.nanmean(per_llm_auc(
                S_te, est.predict_proba(test, iteration_range=(0, k))[:, 1].reshape(S_te.shape[0], -1)))), 4)
                for k in (50, 100, 150)}
            out[name] = row
        out["kept_by_validation"] = rank_by_win_rate(pd.DataFrame(scores).T).index[0]
    out["load_1min_after"] = os.getloadavg()[0]
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
