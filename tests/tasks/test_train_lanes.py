"""train.py's two lanes: the configured assessor here, the baseline columns in a worker thread (and
here, once the assessor's lane is done)."""
from __future__ import annotations

import threading

import numpy as np
import pytest

from assessors.tasks.lanes import run_lanes


def test_the_side_lane_runs_at_the_same_time_in_another_thread():
    # each lane waits for the other: done one after the other, the first wait would time out
    main_started, side_started = threading.Event(), threading.Event()

    def main():
        main_started.set()
        assert side_started.wait(10), "the side lane did not start while main ran"
        return threading.get_ident()

    def first():
        side_started.set()
        assert main_started.wait(10)
        return threading.get_ident()

    def side():
        yield first
        yield lambda: "b"

    ident, items = run_lanes(main, side)
    assert ident == threading.get_ident() and items[0] != ident and items[1] == "b"


def test_without_overlap_the_lanes_run_one_after_the_other_in_this_thread():
    order = []

    def side():
        yield lambda: order.append("side") or threading.get_ident()

    result, items = run_lanes(lambda: order.append("main") or "m", side, overlap=False)
    assert (result, items, order) == ("m", [threading.get_ident()], ["main", "side"])


def test_an_error_in_the_main_lane_stops_the_side_lane_at_its_next_item_and_is_raised():
    produced, never = [], threading.Event()

    def main():
        raise KeyError("main broke")

    def slow(k):
        produced.append(k)
        never.wait(0.5)
        return k

    def slow_side():  # not started or still on its first task when main fails: it stops before a second
        for k in range(5):
            yield lambda k=k: slow(k)

    with pytest.raises(KeyError, match="main broke"):
        run_lanes(main, slow_side)
    assert produced in ([], [0])
    assert not [t for t in threading.enumerate() if t.name.startswith("lane")]  # no thread outlives the call


def test_an_error_in_the_side_lane_is_raised_once_main_is_done():
    done = []

    def broken():
        raise ValueError("baseline broke")

    def side():
        yield lambda: 1
        yield broken

    with pytest.raises(ValueError, match="baseline broke"):
        run_lanes(lambda: done.append("main"), side)
    assert done == ["main"]


def test_once_main_is_done_its_thread_takes_side_tasks_and_results_keep_the_tasks_order():
    # the worker's first task waits until main's thread has taken (and finished) a task of its own
    held_started, main_took, threads = threading.Event(), threading.Event(), {}

    def held():
        threads["held"] = threading.get_ident()
        held_started.set()
        assert main_took.wait(10), "main's thread took no side task once main was done"
        return "held"

    def quick(name):
        threads[name] = threading.get_ident()
        main_took.set()
        return name

    result, items = run_lanes(lambda: held_started.wait(10) and "m", lambda: iter([held, lambda: quick("q1"), lambda: quick("q2")]))
    assert (result, items) == ("m", ["held", "q1", "q2"])
    assert threads["held"] != threading.get_ident() and threading.get_ident() in (threads["q1"], threads["q2"])


@pytest.mark.slow
def test_overlapped_lanes_give_the_serial_predictions_and_columns(compose):
    from assessors.tasks.prepare import prepare
    from assessors.tasks.train import COLUMNS, fit_and_serve

    over = ["data.subtasks=[bbh_navigate]", "features=unigram", "features.max_features=50",
            "llm_split.n_train=10", "llm_split.n_val=4", "llm_split.n_test=2", "assessor.max_epochs=3",
            "assessor.n_members=1", "classifier.param_grid.n_estimators=[20]",
            "paper_generic_classifier.param_grid.n_estimators=[20]", "trust.ood_fallback.n_folds=2"]
    runs = {}
    for overlap in (False, True):
        cfg = compose([*over, f"overlap={str(overlap).lower()}"])
        prep = prepare(cfg)
        preds, fitted, served = fit_and_serve(cfg, prep)
        runs[overlap] = preds, served, prep.timings
    (serial, s_served, s_times), (both, b_served, b_times) = runs[False], runs[True]
    assert list(serial) == list(both) == [m for m in COLUMNS if m in serial]
    assert {"paper_generic", "all_train_data", "reference_only", "specific"} <= set(serial)
    for method in serial:
        np.testing.assert_array_equal(serial[method], both[method], err_msg=method)
    np.testing.assert_array_equal(s_served.P, b_served.P)
    assert set(s_times) == set(b_times)  # every stage still timed on its own
