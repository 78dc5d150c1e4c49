"""The ``task_calibration`` config group: it mirrors :class:`TaskCalibration` and its options reach the calibration
of ``predict.py mode=calibrate_task`` (and, through the server settings, ``POST /v1/tasks/calibrate``)."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

from assessors.task_calibration.calibration import TaskCalibration
from assessors.tasks.calibrate_task import task_calibration
from tests.latent_sim import fit_simulated


@pytest.fixture(scope="module")
def sim():
    return fit_simulated()


def _params(tc) -> dict:
    """Parameters but the assessor, sequences as lists (YAML gives lists, the class's defaults tuples)."""
    return {k: list(v) if isinstance(v, (list, tuple)) else v for k, v in tc.get_params().items() if k != "assessor"}


def test_the_default_option_mirrors_the_class_defaults(compose):
    built = task_calibration(compose(config_name="predict"))(None)
    assert isinstance(built, TaskCalibration)
    defaults = {k: p.default for k, p in inspect.signature(TaskCalibration).parameters.items() if k != "assessor"}
    assert _params(built) == _params(TaskCalibration(None, **defaults))
    # train.py's config, which the OOD sweep composes, has the same option
    assert _params(task_calibration(compose())(None)) == _params(built)


def test_an_override_reaches_the_calibration(compose, sim):
    from assessors.onboarding.task_onboarding import calibrate_model

    model, _ = sim
    cfg = compose(["task_calibration.discrimination=false", "task_calibration.length_grid=[0.2]"], config_name="predict")
    rng = np.random.default_rng(3)
    X = (rng.standard_normal((200, 6)) * 0.6 + 2.0).astype(np.float32)
    Y = np.full((20, len(X)), np.nan)
    Y[:, :30] = rng.random((20, 30)) < 0.3

    class Served:  # what calibrate_model reads of a logged model
        assessor, known_states = model, None

    tc = calibrate_model(Served(), X, list(range(20)), Y, min_answers=5, calibration=task_calibration(cfg))
    assert tc.discrimination is False and tc.length_grid == [0.2] and tc.min_answers == 5
    post, net = tc.item_posterior(X), model.item_parameters(X)
    assert np.allclose(post["a_sd"], 0.0)  # discriminations are not corrected (difficulties are)
    assert np.abs(post["b"] - net[1]).max() > 1e-3 and {c[1] for c in tc.chosen_[0]} == {0.2}


def test_the_server_settings_carry_the_node(compose):
    from assessors.tasks.serve import server_settings

    node = server_settings(compose(["task_calibration.item_share=0.5"], config_name="predict")).task_calibration
    assert node["_target_"].endswith("TaskCalibration") and node["item_share"] == 0.5
