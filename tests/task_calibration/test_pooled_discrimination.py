"""A calibrated task's discriminations pulled towards the task's mean: chosen by marginal likelihood when the
task's prompts share one discrimination, left off when they do not; simulated from the model."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

from assessors.irt_math import sigmoid
from assessors.metrics import per_llm_auc
from assessors.task_calibration.calibration import TaskCalibration
from tests.latent_sim import fit_simulated
from tests.task_calibration.test_calibration import answers, new_task, rmse

GRID = (0.0, 0.5, 1.0)


@pytest.fixture(scope="module")
def sim():
    return fit_simulated()


def shared_discrimination(model, seed):
    """A new task whose prompts share one discrimination (the network's mean over them), the network's
    difficulties shifted: the network's prompt-to-prompt differences in discrimination are wrong."""
    X, a_net, b_net, rng = new_task(model, seed=seed, flip=False)
    a = np.broadcast_to(a_net.mean(0), a_net.shape).copy()
    return X, a, b_net + 0.3 + 0.3 * rng.standard_normal(len(b_net)), a_net, rng


def pools(tc) -> set:
    """The pulls chosen for the discriminations, over members and coordinates."""
    return {c[3] for member in tc.chosen_ for c in member[:-1]}


def test_a_shared_discrimination_is_found_and_ranks_new_llms_better(sim):
    model, _ = sim
    X, a, b, a_net, rng = shared_discrimination(model, seed=21)
    rows, cal = rng.choice(60, 40, replace=False), rng.choice(len(X), 60, replace=False)
    Y = answers(model, a, b, rows, cal, rng)
    plain = TaskCalibration(model, augment_profiles=False, pool_grid=(0.0,)).fit(X, Y, rows)
    pooled = TaskCalibration(model, augment_profiles=False).fit(X, Y, rows)
    assert 1.0 in pools(pooled)
    rest = np.setdiff1d(np.arange(len(X)), cal)
    a_plain, a_pooled = plain.item_posterior(X)["a"][0], pooled.item_posterior(X)["a"][0]
    assert rmse(a_pooled[rest], a[rest]) < 0.6 * rmse(a_plain[rest], a[rest])
    # new LLMs from the prior, ranked on the uncalibrated prompts by each model's parameters
    th = model.priors_[0].sample(300, rng)
    S = (rng.random((300, len(rest))) < sigmoid(th @ a[rest].T - b[rest])).astype(float)
    auc = [np.nanmean(per_llm_auc(S, sigmoid(th @ m.item_parameters(X[rest])[0][0].T - m.item_parameters(X[rest])[1][0])))
           for m in (plain.model_, pooled.model_)]
    assert auc[1] > auc[0]


def test_the_networks_own_discriminations_are_kept_when_the_answers_bear_them_out(sim):
    model, _ = sim
    X, a_net, b_net, rng = new_task(model, seed=23, flip=False)
    rows, cal = rng.choice(60, 40, replace=False), rng.choice(len(X), 60, replace=False)
    tc = TaskCalibration(model, augment_profiles=False, pool_grid=GRID).fit(X, answers(model, a_net, b_net, rows, cal, rng), rows)
    assert 1.0 not in pools(tc)
    rest = np.setdiff1d(np.arange(len(X)), cal)
    spread = a_net[rest] - a_net[rest].mean(0)
    # most of the network's prompt-to-prompt spread survives on the uncalibrated prompts
    kept = tc.item_posterior(X)["a"][0][rest] - tc.item_posterior(X)["a"][0][rest].mean(0)
    assert np.sum(kept * spread) / np.sum(spread ** 2) > 0.6


def test_the_pull_applies_to_the_task_only_and_survives_a_pickle(sim):
    model, d = sim
    X, a, b, a_net, rng = shared_discrimination(model, seed=25)
    rows, cal = rng.choice(60, 40, replace=False), rng.choice(len(X), 60, replace=False)
    tc = TaskCalibration(model, augment_profiles=False, pool_grid=(1.0,)).fit(X, answers(model, a, b, rows, cal, rng), rows)
    assert pools(tc) == {1.0}
    X_train = d["X"][d["pool"]]
    for before, after in zip(model.item_parameters(X_train), tc.model_.item_parameters(X_train)):
        np.testing.assert_allclose(after, before)
    again = pickle.loads(pickle.dumps(tc.model_))
    np.testing.assert_allclose(again.item_parameters(X)[0], tc.model_.item_parameters(X)[0], rtol=1e-6)


def test_pooled_discriminations_recover_better_with_more_answers(sim):
    model, _ = sim
    X, a, b, rng = new_task(model, seed=7)  # discriminations against the network's
    errors, plain = [], []
    for n_llms, k in ((10, 10), (20, 30), (60, 120)):
        rows, cal = rng.choice(60, n_llms, replace=False), rng.choice(len(X), k, replace=False)
        Y = answers(model, a, b, rows, cal, rng)
        errors.append(rmse(TaskCalibration(model).fit(X, Y, rows).item_posterior(X)["a"][0], a))
        plain.append(rmse(TaskCalibration(model, pool_grid=(0.0,)).fit(X, Y, rows).item_posterior(X)["a"][0], a))
    assert errors[2] < min(errors[:2])
    # the network's discriminations point the wrong way: the task's mean is the better prior at every budget
    assert all(e < p for e, p in zip(errors, plain))
