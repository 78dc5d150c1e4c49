import os

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from assessors.errors import DataError
from assessors.reporting.plots import auc_by_method_bar, reliability_diagram, roc_curves, save_figure

LLMS = [f"org-{i}/Some-Quite-Long-Model-Name-{i}B-Instruct" for i in range(18)]
METHODS = ["generic", "specific", "all train data", "reference only"]


@pytest.fixture
def auc_table():
    rng = np.random.default_rng(0)
    t = pd.DataFrame(0.6 + 0.1 * rng.random((18, 4)), index=LLMS, columns=METHODS)
    t.iloc[3, 2] = np.nan  # a missing method result leaves an empty slot, not a crash
    return t


@pytest.fixture
def curves():
    rng = np.random.default_rng(1)
    out = {}
    for k, m in enumerate(METHODS):
        p = rng.random(2000)
        y = (rng.random(2000) < np.clip(p + 0.1 * k - 0.1, 0, 1)).astype(float)
        y[:5] = np.nan
        out[m] = (y, p)
    return out


def _png_ok(path):
    with open(path, "rb") as fh:
        assert fh.read(8) == b"\x89PNG\r\n\x1a\n"
    assert os.path.getsize(path) > 10_000


def test_auc_bar(auc_table, tmp_path):
    fig = auc_by_method_bar(auc_table)
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    assert len(ax.patches) == 18 * 4
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels == list(auc_table.sort_values("generic", ascending=False).index)  # sorted by the main method
    assert sum("mean" in t.get_text() for t in ax.get_legend().get_texts()) == 4
    _png_ok(save_figure(fig, tmp_path / "sub" / "auc.png"))
    assert sorted(os.listdir(tmp_path / "sub")) == ["auc.png"]  # no temp file left behind


def test_auc_bar_bad_input(auc_table):
    with pytest.raises(DataError, match="empty"):
        auc_by_method_bar(auc_table.iloc[:0])
    with pytest.raises(DataError, match="not a column"):
        auc_by_method_bar(auc_table, main="nope")


def test_roc(curves, tmp_path):
    curves = dict(curves, degenerate=(np.ones(10), np.linspace(0, 1, 10)))
    fig = roc_curves(curves)
    ax = fig.axes[0]
    drawn = [line for line in ax.get_lines() if len(line.get_xdata()) > 2]
    assert len(drawn) == 4  # one curve per method with both classes; none for the degenerate one
    assert any("one class" in t.get_text() for t in ax.get_legend().get_texts())
    _png_ok(save_figure(fig, tmp_path / "roc.png"))


def test_reliability(curves, tmp_path):
    fig = reliability_diagram(curves, n_bins=10)
    top, bottom = fig.axes
    assert len(bottom.patches) == 4 * 10
    assert sum(p.get_height() for p in bottom.patches) == pytest.approx(4 * 1995)
    assert all("ECE" in t.get_text() for t in top.get_legend().get_texts()[:4])
    _png_ok(save_figure(fig, tmp_path / "rel.png"))


def test_save_figure_formats(tmp_path):
    fig = Figure()
    fig.add_subplot().plot([0, 1])
    assert save_figure(fig, tmp_path / "a.pdf").read_bytes()[:4] == b"%PDF"
    assert b"<svg" in save_figure(fig, tmp_path / "a.svg").read_bytes()[:500]
