"""Calibrating a new task's items against known abilities: recovery on data simulated from the model, bad input."""
from __future__ import annotations

import pickle
import time

import numpy as np
import pytest

from assessors.errors import DataError
from assessors.irt_math import sigmoid
from assessors.metrics import per_llm_auc
from assessors.task_calibration.calibration import TaskCalibration
from tests.latent_sim import fit_simulated


@pytest.fixture(scope="module")
def sim():
    return fit_simulated()


def new_task(model, n=500, seed=5, flip=True):
    """A task in a region of feature space the model never saw, simulated from the model itself (its
    member-0 coordinates): the true discriminations point against the network's (``flip``), the
    difficulties are shifted, each prompt with its own deviation."""
    rng = np.random.default_rng(seed)
    X = (rng.standard_normal((n, 6)) * 0.6 + 2.0).astype(np.float32)
    a_net, b_net = (v[0] for v in model.item_parameters(X))
    if not flip:
        return X, a_net, b_net, rng
    a = -0.8 * a_net + 0.2 * rng.standard_normal(a_net.shape)
    b = b_net + 0.5 + 0.3 * rng.standard_normal(n)
    return X, a, b, rng


def answers(model, a, b, rows, cal, rng):
    """The known LLMs ``rows`` answer the prompts ``cal`` (NaN elsewhere), from their training abilities."""
    th = model.training_abilities()[0][rows]
    Y = (rng.random((len(rows), len(b))) < sigmoid(th @ a.T - b)).astype(float)
    out = np.full(Y.shape, np.nan)
    out[:, cal] = Y[:, cal]
    return out


def rmse(u, v):
    return float(np.sqrt(np.mean((np.asarray(u) - np.asarray(v)) ** 2)))


@pytest.mark.parametrize("spaces", [("prompt",), ("prompt", "network")])
def test_item_parameters_are_recovered_on_calibrated_and_uncalibrated_prompts(sim, spaces):
    model, _ = sim
    X, a, b, rng = new_task(model)
    rows, cal = rng.choice(60, 20, replace=False), rng.choice(len(X), 30, replace=False)
    rest = np.setdiff1d(np.arange(len(X)), cal)
    tc = TaskCalibration(model, spaces=spaces).fit(X, answers(model, a, b, rows, cal, rng), rows)
    post = tc.item_posterior(X)
    a_net, b_net = (v[0] for v in model.item_parameters(X))
    for idx in (cal, rest):
        assert rmse(post["a"][0][idx], a[idx]) < 0.3 * rmse(a_net[idx], a[idx])
        assert rmse(post["b"][0][idx], b[idx]) < 0.9 * rmse(b_net[idx], b[idx])
    # the 90% intervals of the difficulties of the calibrated prompts cover most true values
    z = (post["b"][0][cal] - b[cal]) / post["b_sd"][0][cal]
    assert np.mean(np.abs(z) < 1.645) >= 0.7
    assert list(tc.status_[cal]) == ["calibrated"] * len(cal)
    assert set(tc.status_[rest]) == {"from_task"}
    assert tc.report()["calibrated"] == 30


def test_more_answers_recover_better_and_new_llms_are_ranked_better(sim):
    model, _ = sim
    X, a, b, rng = new_task(model, seed=7)
    errors = []
    for n_llms, k in ((10, 10), (20, 30), (60, 120)):
        rows, cal = rng.choice(60, n_llms, replace=False), rng.choice(len(X), k, replace=False)
        # the correction alone (pooled discriminations: tests/task_calibration/test_pooled_discrimination.py)
        tc = TaskCalibration(model, pool_grid=(0.0,)).fit(X, answers(model, a, b, rows, cal, rng), rows)
        errors.append(rmse(tc.item_posterior(X)["a"][0], a))
    assert errors[2] < errors[1] < errors[0]
    # new LLMs drawn from the prior, scored from their abilities on the task's prompts
    th = model.priors_[0].sample(200, rng)
    S = (rng.random((200, len(X))) < sigmoid(th @ a.T - b)).astype(float)
    (a0, b0), (a1, b1) = (m.item_parameters(X) for m in (model, tc.model_))
    before, after = per_llm_auc(S, sigmoid(th @ a0[0].T - b0[0])), per_llm_auc(S, sigmoid(th @ a1[0].T - b1[0]))
    assert np.nanmean(after) > np.nanmean(before) + 0.01


def test_difficulties_alone_are_recovered_and_discriminations_kept(sim):
    model, _ = sim
    X, a_net, b_net, rng = new_task(model, seed=11, flip=False)
    b = b_net + 0.6 + 0.3 * rng.standard_normal(len(b_net))  # a harder task, the network's discriminations right
    rows, cal = rng.choice(60, 20, replace=False), rng.choice(len(X), 30, replace=False)
    tc = TaskCalibration(model, discrimination=False, augment_profiles=False).fit(X, answers(model, a_net, b, rows, cal, rng), rows)
    post = tc.item_posterior(X)
    np.testing.assert_allclose(post["a"][0], a_net, atol=1e-6)
    assert np.abs(post["a_sd"]).max() < 1e-6
    rest = np.setdiff1d(np.arange(len(X)), cal)
    assert rmse(post["b"][0][rest], b[rest]) < 0.6 * rmse(b_net[rest], b[rest])


def test_answers_the_network_explains_barely_move_it(sim):
    model, _ = sim
    X, a, b, rng = new_task(model, seed=9, flip=False)
    rows, cal = rng.choice(60, 20, replace=False), rng.choice(len(X), 30, replace=False)
    tc = TaskCalibration(model, augment_profiles=False).fit(X, answers(model, a, b, rows, cal, rng), rows)
    post = tc.item_posterior(X)
    # the correction is shrunk to well within the network's own spread of parameters
    assert rmse(post["b"][0], b) < 0.35 * np.std(b)
    assert rmse(post["a"][0], a) < 0.35 * np.std(a)


def test_training_prompts_keep_their_parameters_and_new_llms_their_posterior(sim):
    model, d = sim
    X, a, b, rng = new_task(model)
    rows, cal = rng.choice(60, 20, replace=False), rng.choice(len(X), 30, replace=False)
    tc = TaskCalibration(model).fit(X, answers(model, a, b, rows, cal, rng), rows)
    X_train = d["X"][d["pool"]]
    for before, after in zip(model.item_parameters(X_train), tc.model_.item_parameters(X_train)):
        np.testing.assert_allclose(after, before)
    R = d["S"][np.ix_(d["new"][:5], d["pool"][np.arange(0, 600, 10)])]
    np.testing.assert_allclose(tc.model_.reference_posterior(R).theta, model.reference_posterior(R).theta)
    # the adapted model pickles (a served model stores it) and predicts the same after
    again = pickle.loads(pickle.dumps(tc.model_))
    np.testing.assert_allclose(again.predict_proba(X[:50], R), tc.model_.predict_proba(X[:50], R), rtol=1e-5)


def test_item_parameters_of_a_prompt_set_are_computed_once_and_are_exactly_the_uncached_ones(sim):
    model, _ = sim
    X, a, b, rng = new_task(model)
    rows, cal = rng.choice(60, 20, replace=False), rng.choice(len(X), 30, replace=False)
    cm = TaskCalibration(model).fit(X, answers(model, a, b, rows, cal, rng), rows).model_
    calls = []
    compute = cm._computed_params
    cm._computed_params = lambda Q: calls.append(len(Q)) or compute(Q)
    first, again = cm._params(X), cm._params(X.copy())  # an equal array, another object: served from the memo
    assert calls == [len(X)] and again is first
    for (a_c, b_c), (a_u, b_u) in zip(first, compute(X)):
        assert np.array_equal(a_c, a_u) and np.array_equal(b_c, b_u)
        assert not a_c.flags.writeable  # shared by later callers: nobody may change them in place
    # a different prompt set (one value changed) is computed, not served
    Y = X.copy()
    Y[3, 0] += 1e-3
    other = cm._params(Y)
    assert calls == [len(X), len(X)]
    for (a_c, b_c), (a_u, b_u) in zip(other, compute(Y)):
        assert np.array_equal(a_c, a_u) and np.array_equal(b_c, b_u)
    assert not np.array_equal(other[0][1], first[0][1])
    # the base model shares no memo with its adapted copy: the task's prompts keep the network's parameters
    for (a_b, b_b), (a_u, b_u) in zip(model._params(X), model._computed_params(X)):
        assert np.array_equal(a_b, a_u) and np.array_equal(b_b, b_u)
    assert not np.array_equal(model._params(X)[0][1], first[0][1])
    # the memo is never pickled, and a model loaded predicts exactly the same
    del cm._computed_params
    loaded = pickle.loads(pickle.dumps(cm))
    assert "_params_memo" not in loaded.__dict__
    assert all(np.array_equal(u, v) for u, v in zip(loaded.item_parameters(X), cm.item_parameters(X)))


def test_500_prompts_from_20_llms_x_30_prompts_take_well_under_10_s(sim):
    model, _ = sim
    X, a, b, rng = new_task(model)
    rows, cal = rng.choice(60, 20, replace=False), rng.choice(len(X), 30, replace=False)
    Y = answers(model, a, b, rows, cal, rng)
    t0 = time.perf_counter()
    TaskCalibration(model).fit(X, Y, rows)
    assert time.perf_counter() - t0 < 10.0


def test_bad_input_is_a_clear_error_naming_the_rows(sim):
    model, _ = sim
    X, a, b, rng = new_task(model, n=40)
    rows = np.arange(5)
    Y = answers(model, a, b, rows, np.arange(20), rng)
    bad = Y.copy()
    bad[3, 7] = 2.0
    with pytest.raises(DataError, match="row 3, item 7"):
        TaskCalibration(model).fit(X, bad, rows)
    with pytest.raises(DataError, match=r"rows \[1\] name LLMs the model does not know"):
        TaskCalibration(model).fit(X, Y, [0, 99, 2, 3, 4])
    with pytest.raises(DataError, match=r"duplicated llm_rows value 1 at row 3 \(first at row 1.*give one row per LLM"):
        TaskCalibration(model).fit(X, Y, [0, 1, 2, 1, 4])
    with pytest.raises(DataError, match="expected"):
        TaskCalibration(model).fit(X[:10], Y, rows)
    with pytest.raises(Exception, match="not fitted"):
        TaskCalibration(model).report()


def test_too_few_answers_say_so_and_leave_the_network_alone(sim):
    model, _ = sim
    X, a, b, rng = new_task(model, n=40)
    rows = np.arange(3)  # fewer answers per prompt than min_answers=5
    Y = answers(model, a, b, rows, np.arange(20), rng)
    tc = TaskCalibration(model).fit(X, Y, rows)
    assert set(tc.status_) == {"prior_only"}
    for before, after in zip(model.item_parameters(X), tc.model_.item_parameters(X)):
        np.testing.assert_allclose(after, before)
    # with enough answers on some prompts, the rest that have a few are told apart from unanswered ones
    Y2 = answers(model, a, b, np.arange(8), np.arange(20), rng)
    Y2[3:, 10:15] = np.nan
    tc = TaskCalibration(model).fit(X, Y2, np.arange(8))
    assert list(tc.status_[10:15]) == ["too_few_answers"] * 5
    assert set(tc.status_[20:]) == {"from_task"}
    assert tc.report()["too_few_answers"] == 5


def test_the_task_spread_covers_the_known_llms_accuracy_error_and_shrinks_with_answers(sim):
    model, _ = sim
    X, a, b, rng = new_task(model, seed=13)
    th = model.training_abilities()[0]
    spreads = []
    for n_llms, k in ((20, 30), (60, 120)):
        rows, cal = rng.choice(60, n_llms, replace=False), rng.choice(len(X), k, replace=False)
        tc = TaskCalibration(model).fit(X, answers(model, a, b, rows, cal, rng), rows)
        rest = np.setdiff1d(np.arange(len(X)), cal)
        a1, b1 = (v[0][rest] for v in tc.model_.item_parameters(X))
        # every known LLM's expected accuracy on the uncalibrated prompts, true against adapted parameters
        error = sigmoid(th @ a[rest].T - b[rest]).mean(1) - sigmoid(th @ a1.T - b1).mean(1)
        assert np.sqrt(np.mean(error ** 2)) < 2.0 * tc.task_spread_
        assert tc.model_.accuracy_error_sd_ >= tc.task_spread_ > 0.0
        spreads.append(tc.task_spread_)
    assert spreads[1] < spreads[0]
