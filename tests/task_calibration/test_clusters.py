"""Cluster-level difficulty offsets of task calibration: recovery of group shifts simulated from the model."""
from __future__ import annotations

import numpy as np
import pytest

from assessors.core.task_clusters import nearest
from assessors.task_calibration.calibration import TaskCalibration
from tests.latent_sim import fit_simulated
from tests.task_calibration.test_calibration import answers, rmse

GRID = (1, 2, 3, 5)


@pytest.fixture(scope="module")
def sim():
    return fit_simulated()


def grouped_task(model, shifts, seed, n=450):
    """A new task of ``len(shifts)`` groups of prompts in distinct directions of feature space, its true
    difficulties the network's shifted per group (plus a per-prompt deviation), discriminations kept."""
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((len(shifts), 6)) * 1.5 + 2.0
    group = np.arange(n) % len(shifts)
    X = (centers[group] + 0.25 * rng.standard_normal((n, 6))).astype(np.float32)
    a_net, b_net = (v[0] for v in model.item_parameters(X))
    b = b_net + np.asarray(shifts)[group] + 0.2 * rng.standard_normal(n)
    rows, cal = rng.choice(60, 30, replace=False), rng.choice(n, 60, replace=False)
    return X, group, a_net, b_net, b, rows, cal, answers(model, a_net, b, rows, cal, rng)


@pytest.mark.parametrize("seed", [3, 4])
def test_group_shifts_are_recovered_and_the_band_widens(sim, seed):
    model, _ = sim
    shifts = (-1.5, 0.0, 1.5)
    X, group, a_net, b_net, b, rows, cal, Y = grouped_task(model, shifts, seed)
    kw = dict(discrimination=False, augment_profiles=False)
    tc = TaskCalibration(model, cluster_grid=GRID, **kw).fit(X, Y, rows)
    plain = TaskCalibration(model, **kw).fit(X, Y, rows)
    assert tc.clusters_ is not None and len(tc.clusters_.centers) == 3, tc.clusters_
    lab = nearest(X, tc.clusters_.centers)
    for g, shift in enumerate(shifts):
        c = np.bincount(lab[group == g]).argmax()
        assert np.mean(lab[group == g] == c) > 0.95  # the clusters are the groups
        # within its posterior spread (a group the known LLMs nearly all pass says little about its shift)
        assert abs(tc.clusters_.mean[0, c] - shift) < max(0.4, 2.0 * np.sqrt(tc.clusters_.var[0, c]))
    rest = np.setdiff1d(np.arange(len(X)), cal)
    # groups this far apart the smooth correction alone also finds: the clusters do about as well
    b_tc, b_plain = tc.item_posterior(X)["b"][0], plain.item_posterior(X)["b"][0]
    assert rmse(b_tc[rest], b[rest]) < min(0.5 * rmse(b_net[rest], b[rest]), 1.2 * rmse(b_plain[rest], b[rest]))
    # the offsets' uncertainty is in the items' spread (and the intervals cover most true difficulties)
    post = tc.item_posterior(X)
    assert np.all(post["b_sd"][0] ** 2 >= tc.clusters_.moments(X)[1][0] - 1e-9)
    assert np.mean(np.abs(post["b"][0][rest] - b[rest]) < 1.645 * post["b_sd"][0][rest]) >= 0.7


@pytest.mark.parametrize("seed", [3, 4, 5])
def test_no_clusters_are_chosen_when_the_groups_share_one_shift(sim, seed):
    model, _ = sim
    X, _, _, _, _, rows, _, Y = grouped_task(model, (0.6, 0.6, 0.6), seed)
    tc = TaskCalibration(model, cluster_grid=GRID, discrimination=False, augment_profiles=False).fit(X, Y, rows)
    assert tc.clusters_ is None
    assert TaskCalibration(model, cluster_grid=()).fit(X, Y, rows).clusters_ is None  # the step off
