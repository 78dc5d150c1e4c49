"""Label-free learning curve on simulated confidences: the meta-model's MAE against the number of
profiles and of items per dataset, beside oracle^l and the label-free floor; prints JSON.

Data: :func:`assessors.estimation.label_free.simulate.simulate_confidence_results` with the known
relation ``P(correct | c) = c ** gamma`` and 2 prompt variants per dataset, as in the SmolLM2 data.
Per (profiles, items, seed) it runs the preset's 5-fold leave-datasets-out CV of the preset's k-NN
meta-model (``conf/estimator/confidence_profile.yaml``, unchanged) and reports

* ``meta_knn``: its MAE; ``avgtrain``: the MAE of predicting the seen mean (the accuracies' spread);
* ``known_relation``: the MAE of ``mean(c ** gamma)``, the estimate of one who knows the relation
  (but not a dataset's own shift, ``--shift-sd``, which no profile reveals);
* ``floor``: :func:`~assessors.estimation.label_free.oracle.known_probability_mae` of the item
  probabilities ``c ** gamma``: the grades' own noise, which no label-free method beats;
* ``oracle_<l>``: oracle^l on the same units.

``--real`` adds the floor on the SmolLM2 data, with item probabilities from one isotonic map of
confidence to success fitted on all its units (an in-sample diagnostic, not an estimator).

    python benchmarks/label_free_curve.py [--profiles 52 104 260 520] [--items 35 100] [--seeds 0 1 2] [--shift-sd 0.3] [--real]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's package, not another installed copy


def one_run(n_profiles: int, n_items: int, seed: int, gamma: float, shift_sd: float, ls: list[int],
            draws: int) -> dict:
    from hydra.utils import instantiate
    from omegaconf import OmegaConf
    from sklearn.model_selection import GroupKFold

    from assessors.estimation.label_free.baselines import AvgTrain
    from assessors.estimation.label_free.harness import units_from_results
    from assessors.estimation.label_free.oracle import known_probability_mae, oracle_mae
    from assessors.estimation.label_free.simulate import simulate_confidence_results

    res = simulate_confidence_results(n_datasets=n_profiles // 2, n_variants=2, n_items=n_items, gamma=gamma,
                                      shift_sd=shift_sd, seed=seed)
    conf, correct, acc, meta = units_from_results(res)
    spec = OmegaConf.load(ROOT / "conf/estimator/confidence_profile.yaml")
    pred = {"meta_knn": np.full(len(acc), np.nan), "avgtrain": np.full(len(acc), np.nan)}
    for tr, te in GroupKFold(n_splits=5).split(acc, groups=meta["dataset"]):
        for name, est in (("meta_knn", instantiate(spec)), ("avgtrain", AvgTrain())):
            pred[name][te] = est.fit([conf[i] for i in tr], acc[tr]).predict([conf[i] for i in te])
    out = {name: float(np.mean(np.abs(p - acc))) for name, p in pred.items()}
    out["known_relation"] = float(np.mean(np.abs(np.array([np.mean(c ** gamma) for c in conf]) - acc)))
    out["floor"] = known_probability_mae([c ** gamma for c in conf])
    out.update({f"oracle_{l}": m for l, m in oracle_mae(correct, ls, n_draws=draws, seed=seed).items()})
    return out


def real_floor() -> dict:
    """The floor on the SmolLM2 confidences under one pooled isotonic confidence-to-success map."""
    import os

    from hydra.utils import instantiate
    from omegaconf import OmegaConf
    from sklearn.isotonic import IsotonicRegression

    from assessors.estimation.label_free.harness import units_from_results
    from assessors.estimation.label_free.oracle import known_probability_mae

    os.chdir(ROOT)  # the data config's path is relative to the checkout
    conf, correct, acc, _ = units_from_results(instantiate(OmegaConf.load(ROOT / "conf/data/smollm2_confidence.yaml")))
    iso = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(np.concatenate(conf),
                                                                               np.concatenate(correct))
    probs = [iso.predict(c) for c in conf]
    return {"units": len(conf), "floor_isotonic": known_probability_mae(probs),
            "isotonic_in_sample_mae": float(np.mean(np.abs(np.array([p.mean() for p in probs]) - acc)))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profiles", type=int, nargs="+", default=[52, 104, 260, 520])
    ap.add_argument("--items", type=int, nargs="+", default=[35, 100])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--gamma", type=float, default=2.0)
    ap.add_argument("--shift-sd", type=float, default=0.0, help="per-dataset logit shift of the relation")
    ap.add_argument("--ls", type=int, nargs="+", default=[8, 16, 32])
    ap.add_argument("--draws", type=int, default=50)
    ap.add_argument("--real", action="store_true")
    args = ap.parse_args()
    rows = []
    for n_items in args.items:
        for n_profiles in args.profiles:
            runs = [one_run(n_profiles, n_items, s, args.gamma, args.shift_sd, args.ls, args.draws) for s in args.seeds]
            row = {"profiles": n_profiles, "items": n_items}
            row.update({k: round(float(np.mean([r[k] for r in runs])), 4) for k in runs[0]})
            row["meta_knn_sd_over_seeds"] = round(float(np.std([r["meta_knn"] for r in runs])), 4)
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)  # progress
    report = {"gamma": args.gamma, "shift_sd": args.shift_sd, "seeds": args.seeds, "oracle_draws": args.draws, "curve": rows}
    if args.real:
        report["smollm2"] = real_floor()
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
