"""A test LLM without an AUC (constant success) is named next to the mean it is left out of."""
from __future__ import annotations

import numpy as np
import pandas as pd

from assessors.reporting.run_report import exclusion_notes, summarise, undefined_auc


def test_undefined_auc_is_named_and_counted():
    long = pd.DataFrame([("a", "generic", "auc", 0.7), ("b", "generic", "auc", np.nan), ("c", "generic", "auc", 0.5),
                         ("a", "specific", "auc", 0.6), ("b", "specific", "auc", np.nan), ("c", "specific", "auc", 0.8)],
                        columns=["llm", "method", "metric", "value"])
    auc, summary = summarise(long)
    assert summary["auc/generic"] == 0.6  # the mean of the two defined AUCs ...
    assert summary["n_llms_scored/generic"] == 2.0 and summary["n_test_llms"] == 3.0  # ... and it says so
    assert undefined_auc(auc) == {"generic": ["b"], "specific": ["b"]}

    notes = exclusion_notes(None, auc)
    assert notes == ["generic: AUC undefined for 1 test LLM(s) with constant success on the test items, excluded "
                     "from the mean row: b",
                     "specific: AUC undefined for 1 test LLM(s) with constant success on the test items, excluded "
                     "from the mean row: b"]
