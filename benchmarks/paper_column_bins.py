"""The paper_generic column of ``python train.py`` with its histogram bins cut on every training row
(``xgboost.XGBClassifier``) and on the unique prompts and LLMs (``BinnedXGBClassifier``, the column's
default), on one seed: fit wall and CPU time, trees kept, mean validation and test AUC and test Brier
score of each; prints JSON.

Both fit in one process, alternately (old, new, old, new), so that a change of load hits both; on shared
cores compare the ratios. ``ROUNDS=1`` fits each once (the AUCs do not change between rounds).

    python benchmarks/paper_column_bins.py --seed 0
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package and benchmarks

from benchmarks.paper_column_early_stop import compare_column  # noqa: E402

if __name__ == "__main__":
    compare_column(__doc__, "paper_generic_classifier.estimator._target_",
                   {"all_rows": "xgboost.XGBClassifier",
                    "unique_parts": "assessors.classifiers.binned_xgb.BinnedXGBClassifier"},
                   rounds=int(os.environ.get("ROUNDS", 2)))
