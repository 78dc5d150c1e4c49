"""Adapted models saved when task calibration lived in ``assessors.core`` still load and predict the same:
their pickles may name ``TaskProfiles`` under its old module (:data:`assessors.core.saved_model.MOVED_MODULES`)."""
from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest

from assessors.core.pyfunc import AssessorModel
from assessors.core.saved_model import MOVED_MODULES
from assessors.task_calibration.calibration import TaskCalibration
from assessors.core.task_calibration_profiles import TaskProfiles

TRAIN, TASK = "bbh_navigate", "bbh_web_of_lies"


@pytest.fixture(scope="module")
def adapted(data_dir):
    """A small latent pyfunc model fitted on one real subtask, adapted to another from its training LLMs'
    real answers on 40 of that subtask's prompts."""
    from assessors.core.latent import LatentAssessor
    from assessors.data.loaders.open_llm_leaderboard_v2 import load_open_llm_leaderboard_v2
    from assessors.features.ngrams import UnigramFeaturizer

    res = load_open_llm_leaderboard_v2(root=data_dir, subtasks=[TRAIN, TASK], download=False)
    group = res.instances["subgroup"].astype(str).to_numpy()
    ids = np.asarray(res.instance_ids)
    train, task = list(ids[group == TRAIN][:200]), list(ids[group == TASK][:100])
    llms = list(res.llms[:12])
    feat = UnigramFeaturizer(max_features=100).fit(res.prompts(train))
    X = feat.transform(res.prompts(train))
    ref = np.arange(0, 200, 10)
    est = LatentAssessor(dims=2, hidden_sizes=(16,), n_members=1, max_epochs=5, patience=2, residual_dims=8,
                         num_threads=1).fit(X, res.matrix(llms, train), ref)
    X_task, Y = feat.transform(res.prompts(task)), res.matrix(llms, task).astype(float)
    Y[:, 40:] = np.nan
    tc = TaskCalibration(est).fit(X_task, Y, np.arange(len(llms)))
    assert isinstance(tc.model_.profiles_, TaskProfiles)
    ref_ids = [train[i] for i in ref]
    model = AssessorModel(tc.model_, feat, ref_ids, res.matrix(llms, ref_ids), llms)
    return model, pd.DataFrame({"prompt": res.prompts(task[35:50])})


#: Where older stored adapted models name TaskProfiles (before it had a module of its own).
OLD_MODULES = ["assessors.core.task_calibration"]


def test_every_old_module_is_mapped_to_the_new_one():
    assert {m: MOVED_MODULES.get(m) for m in OLD_MODULES} == dict.fromkeys(OLD_MODULES, TaskProfiles.__module__)


@pytest.mark.parametrize("old", OLD_MODULES)
def test_an_adapted_model_pickled_under_the_old_module_loads_and_predicts_the_same(adapted, old):
    model, df = adapted
    # as the version that had the class there pickled it (protocol 2 names a class by a line of text)
    new_name = f"c{TaskProfiles.__module__}\nTaskProfiles\n".encode()
    blob = pickle.dumps(model, protocol=2)
    assert blob.count(new_name) == 1
    loaded = pickle.loads(blob.replace(new_name, f"c{old}\nTaskProfiles\n".encode()))
    assert type(loaded.assessor.profiles_) is TaskProfiles
    for llm in model.llms[:2]:
        new, again = model.predict(None, df, {"llm": llm}), loaded.predict(None, df, {"llm": llm})
        np.testing.assert_array_equal(again["p_success"], new["p_success"])


def test_the_old_modules_hold_no_code():
    """Only unpickling reads them: code importing the calibration from ``assessors.core`` fails."""
    with pytest.raises(ImportError):
        from assessors.core.task_calibration import TaskCalibration  # noqa: F401
