import io

import numpy as np
import pandas as pd
import pytest

from assessors.errors import DataError
from assessors.reporting.tables import format_console, per_llm_table, print_table, to_markdown


@pytest.fixture
def long():
    rows = []
    for llm, base in [("zeta-7b", 0.7), ("alpha-70b", 0.8)]:  # not alphabetical: order must be kept
        for method, delta in [("generic", 0.01), ("specific", 0.0), ("all train data", -0.02)]:
            rows.append((llm, method, "auc", base + delta))
            rows.append((llm, method, "ece", 0.05 - delta))
    return pd.DataFrame(rows, columns=["llm", "method", "metric", "value"])


def test_single_metric_table(long):
    t = per_llm_table(long, metric="auc")
    assert list(t.index) == ["zeta-7b", "alpha-70b", "mean"]
    assert list(t.columns) == ["generic", "specific", "all train data"]
    assert t.loc["alpha-70b", "generic"] == pytest.approx(0.81)
    assert t.loc["mean", "all train data"] == pytest.approx((0.68 + 0.78) / 2)


def test_all_metrics_and_missing_cells(long):
    long = long.drop(index=2)  # (zeta-7b, specific, auc) missing -> NaN, and the mean skips it
    t = per_llm_table(long)
    assert t.columns.nlevels == 2 and t.columns[0] == ("auc", "generic")
    assert np.isnan(t.loc["zeta-7b", ("auc", "specific")])
    assert t.loc["mean", ("auc", "specific")] == pytest.approx(0.80)
    assert "mean" not in per_llm_table(long, mean_row=False).index


def test_errors(long):
    with pytest.raises(DataError, match="duplicated"):
        per_llm_table(pd.concat([long, long.iloc[:1]]), metric="auc")
    with pytest.raises(DataError, match="lacks columns"):
        per_llm_table(long.drop(columns="metric"))
    with pytest.raises(DataError, match="no rows with metric 'brier'"):
        per_llm_table(long, metric="brier")


def test_markdown_and_console(long):
    t = per_llm_table(long, metric="auc")
    md = to_markdown(t)
    lines = md.splitlines()
    assert lines[0].startswith("| llm") and "generic" in lines[0] and set(lines[1]) <= set("|-: ")
    assert "0.810" in md and "0.8100" not in md
    assert " / " in to_markdown(per_llm_table(long))  # MultiIndex columns flattened
    text = format_console(t, title="Test AUC")
    assert text.splitlines()[0] == "Test AUC"
    alpha = next(line for line in text.splitlines() if line.startswith("alpha-70b"))
    assert "0.810*" in alpha and alpha.count("*") == 1  # best of the row marked
    low = format_console(per_llm_table(long, metric="ece"), best="min")
    assert "0.040*" in low  # generic has the lowest ECE
    buf = io.StringIO()
    print_table(t, file=buf, best=None)
    assert "*" not in buf.getvalue() and "alpha-70b" in buf.getvalue()
