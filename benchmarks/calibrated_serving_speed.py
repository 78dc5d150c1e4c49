"""How long a task-calibrated latent model takes to serve many LLMs' trust statistics on one prompt set; prints JSON.

In-process as ``python train.py assessor=latent split=<split>``, then calibrated (as
``benchmarks/task_calibration_speed.py`` does) on ``--prompts`` held-out prompts from ``--llms`` training
LLMs x ``--k`` prompts. Each of ``--serve`` test LLMs then gets :meth:`LatentAssessor.trust_statistics`
from its reference answers on those prompts, twice: ``uncached_s`` recomputing the item parameters on
every call (the task correction's Gaussian process included), ``memoised_s`` with the model's memo of
them (started empty); ``identical`` says whether both gave the same bits.

    python benchmarks/calibrated_serving_speed.py --split ood_logic --seed 0
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from task_calibration_speed import arguments, calibration_task  # noqa: E402


def main() -> None:
    a = arguments(__doc__, k=100, serve=18)
    from assessors.core.evidence import Evidence
    from assessors.task_calibration.calibration import TaskCalibration

    _, prep, ref_ids, model, _, _, X, Y, rows = calibration_task(a)
    calibrated = TaskCalibration(model).fit(X, Y, rows).model_
    X_ref = model.reference_features_
    evidence = [Evidence(X_ref, r) for r in prep.results.matrix(prep.llms["test"], ref_ids)[:a.serve]]

    def serve():
        t0 = time.perf_counter()
        out = [calibrated.trust_statistics(e, X) for e in evidence]
        return time.perf_counter() - t0, [np.concatenate([o.p_target, [o.expected_accuracy, *o.accuracy_band],
                                                          o.P_target.ravel()]) for o in out]

    calibrated._params = calibrated._computed_params  # every call recomputes
    uncached_s, before = serve()
    del calibrated._params
    memoised_s, after = serve()
    print(json.dumps({"split": a.split, "seed": a.seed, "prompts": a.prompts, "k": a.k, "served_llms": len(evidence),
                      "uncached_s": round(uncached_s, 3), "memoised_s": round(memoised_s, 3),
                      "identical": all(np.array_equal(u, v) for u, v in zip(before, after)),
                      "load": os.getloadavg()[0]}))


if __name__ == "__main__":
    main()
