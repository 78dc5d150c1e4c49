"""Recovering the item order of rows written by data-parallel evaluation runs."""
import numpy as np
import pytest

from assessors.data.item_order import (align_rows, detect_ranks, header_ranks, interleaved_positions, rekey,
                                       to_true_order)
from assessors.data.loaders.open_llm_leaderboard_v2 import load_open_llm_leaderboard_v2


def test_interleaved_positions_round_trip():
    assert interleaved_positions(7, 2).tolist() == [0, 2, 4, 6, 1, 3, 5]
    assert interleaved_positions(5, 1).tolist() == [0, 1, 2, 3, 4]
    x = np.arange(250.0)
    for r in (1, 2, 3, 4, 8):
        written = x[interleaved_positions(250, r)]
        assert np.array_equal(to_true_order(written, r), x)
    assert header_ranks([str(i) for i in interleaved_positions(187, 2)]) == 2
    assert header_ranks(["a", "b"]) is None and header_ranks([0, 2, 3]) is None


def _simulate(rng, n_llms=40, sizes=(250, 256, 187)):
    """2PL-like 0/1 answers in the true order, then written by a random process count per row."""
    theta = rng.normal(size=n_llms)
    true, written = [], []
    ranks = rng.choice([1, 2, 4, 8], size=n_llms, p=[0.1, 0.5, 0.1, 0.3])
    for n in sizes:
        b = rng.normal(size=n)
        y = (rng.random((n_llms, n)) < 1 / (1 + np.exp(-(theta[:, None] - b[None])))).astype(float)
        true.append(y)
        written.append(np.stack([y[i, interleaved_positions(n, r)] for i, r in enumerate(ranks)]))
    return true, written, ranks


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_recovers_every_rows_process_count(seed):
    rng = np.random.default_rng(seed)
    true, written, ranks = _simulate(rng)
    ids = [interleaved_positions(b.shape[1], 2) for b in written]  # column names in 2-process order
    header = [b[:, interleaved_positions(b.shape[1], 2)] for b in true]  # what each column should hold
    aligned, det = align_rows(written, ids)
    assert det.status == ["ok"] * len(ranks)
    assert np.array_equal(det.ranks, ranks)
    for a, h in zip(aligned, header):
        assert np.array_equal(a, h)


def test_reference_anchors_rows_that_all_share_one_order():
    rng = np.random.default_rng(3)
    true, written, _ = _simulate(rng)
    written = [np.stack([y[i, interleaved_positions(y.shape[1], 8)] for i in range(len(y))]) for y in true]
    ids = [interleaved_positions(b.shape[1], 2) for b in written]
    ref = [y.mean(0)[interleaved_positions(y.shape[1], 2)] for y in true]  # column order
    # without an anchor, rows that all agree look right in any common order
    _, free = align_rows(written, ids)
    assert set(free.ranks.tolist()) <= {0, 2} and (free.ranks == 2).sum() >= 38
    _, det = align_rows(written, ids, reference=ref)
    assert set(det.ranks.tolist()) <= {0, 8} and (det.ranks == 8).sum() >= 38


def test_rows_without_signal_are_undetermined_or_order_free():
    rng = np.random.default_rng(4)
    noise = [(rng.random((20, n)) < 0.5).astype(float) for n in (250, 250)]
    noise[0][0] = noise[1][0] = 1.0  # a constant row is the same in every order
    det = detect_ranks(noise, header_ranks=2)
    assert det.status[0] == "order-free" and det.ranks[0] == 2
    assert det.status[1:].count("undetermined") >= 18  # of 19 rows of pure noise
    assert np.isnan(rekey(noise[0], np.where(det.ranks > 0, det.ranks, 0), np.arange(250))[det.ranks == 0]).all()


def test_leaderboard_rows_line_up_with_the_prompt_targets(data_dir):
    """An LLM biased to one answer succeeds more often where that is the target: only in the right order."""
    subs = ["bbh_navigate", "bbh_web_of_lies", "bbh_formal_fallacies"]
    pos = {"bbh_navigate": "yes", "bbh_web_of_lies": "yes", "bbh_formal_fallacies": "valid"}

    def mean_abs_corr(r):
        g = r.instances["subgroup"].to_numpy()
        tgt = r.instances["target"].astype(str).str.strip().str.lower().to_numpy()
        out = {}
        for s in subs:
            c = np.flatnonzero(g == s)
            y = (tgt[c] == pos[s]).astype(float)
            out[s] = np.mean([abs(np.corrcoef(row, y)[0, 1]) for row in r.success[:, c] if row.std() > 0])
        return out

    fixed = mean_abs_corr(load_open_llm_leaderboard_v2(root=data_dir, subtasks=subs))
    raw = mean_abs_corr(load_open_llm_leaderboard_v2(root=data_dir, subtasks=subs, item_order="as_written"))
    for s in subs:
        assert fixed[s] > 0.35 and fixed[s] > raw[s] + 0.1, (s, fixed[s], raw[s])


def test_block_scores_equal_each_rows_own_correlation():
    """All rows of a block scored at once give, to the last bit, each row's correlation computed alone
    (its candidates' re-keyed rows against the leave-one-out consensus); constant, short and missing
    rows are left out."""
    from assessors.data.item_order import _block_scores, _consensus, _nan_corr

    rng = np.random.default_rng(3)
    _, written, _ = _simulate(rng, n_llms=12, sizes=(250,))
    block = written[0].copy()
    block[0] = 1.0  # constant
    block[1, 2:] = np.nan  # two cells
    block[2, rng.random(250) < 0.3] = np.nan
    candidates = (1, 2, 4, 8)
    true_block = np.stack([to_true_order(row, 2) for row in block])
    cons = _consensus([true_block])[0]
    scores, size = _block_scores(block, true_block, cons, candidates, None)
    assert np.isnan(scores[:2]).all() and size[:2].tolist() == [0, 0]
    for i in range(2, len(block)):
        own = true_block[i]
        with np.errstate(invalid="ignore", divide="ignore"):
            target = (cons[0] - np.nan_to_num(own)) / (cons[1] - np.isfinite(own))
        alone = _nan_corr(np.stack([to_true_order(block[i], r) for r in candidates]), target)
        assert scores[i].tobytes() == alone.tobytes()
        assert size[i] == np.isfinite(block[i]).sum()
