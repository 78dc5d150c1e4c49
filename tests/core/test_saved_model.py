"""Pyfunc models saved before the assessor protocol: they load with a note of what they lack, or fail
with one line naming their format and how to retrain; never a traceback."""
from __future__ import annotations

import logging
import sys

import numpy as np
import pandas as pd
import pytest

from assessors.core.pyfunc import AssessorModel
from assessors.core.saved_model import MODEL_FORMAT
from assessors.errors import ConfigError

SUBTASKS = ["bbh_navigate", "bbh_web_of_lies"]


@pytest.fixture(scope="module")
def latent_model(data_dir):
    """A small latent pyfunc model fitted on real results, as ``train.py`` builds it."""
    from assessors.core.latent import LatentAssessor
    from assessors.data.loaders.open_llm_leaderboard_v2 import load_open_llm_leaderboard_v2
    from assessors.features.ngrams import UnigramFeaturizer

    res = load_open_llm_leaderboard_v2(root=data_dir, subtasks=SUBTASKS, download=False)
    ids, llms = list(res.instance_ids[:240]), list(res.llms[:12])
    feat = UnigramFeaturizer(max_features=100).fit(res.prompts(ids))
    X, S = feat.transform(res.prompts(ids)), res.matrix(llms, ids)
    ref = np.arange(0, 240, 12)
    est = LatentAssessor(dims=2, hidden_sizes=(16,), n_members=1, max_epochs=5, patience=2, residual_dims=8,
                         num_threads=1).fit(X, S, ref)
    ref_ids = [ids[i] for i in ref]
    model = AssessorModel(est, feat, ref_ids, res.matrix(llms, ref_ids), llms, known_states=est.describe_known(X, S, ref))
    return {"model": model, "X": X, "S": S, "prompts": res.prompts(res.instance_ids[240:250])}


def _save(model, path):
    import mlflow.pyfunc

    mlflow.pyfunc.save_model(str(path), python_model=model, pip_requirements=["assessors"])
    return str(path)


def _as_saved_before_the_protocol(model: AssessorModel, X, S) -> AssessorModel:
    """The same model as the previous version pickled it: the known LLMs as one batched posterior, no
    format number, no stored trust policy."""
    old = AssessorModel.__new__(AssessorModel)
    state = {k: v for k, v in vars(model).items() if k not in ("known_states", "model_format", "trust_policy")}
    old.__dict__.update(state, known_posterior=model.assessor.posterior(X, S))
    return old


def test_a_model_saved_before_the_protocol_loads_with_a_note_of_what_it_lacks(latent_model, tmp_path, caplog):
    from assessors.routing.engine import load_assessor_model

    model = latent_model["model"]
    path = _save(_as_saved_before_the_protocol(model, latent_model["X"], latent_model["S"]), tmp_path / "old")
    with caplog.at_level(logging.WARNING, logger="assessors.core.saved_model"):
        loaded = load_assessor_model(path)
    assert f"saved in format 1 (this version writes {MODEL_FORMAT})" in caplog.text
    assert "no stored trust policy" in caplog.text and "python train.py" in caplog.text
    assert "known LLMs' states" not in caplog.text  # converted from the old batched posterior, not missing
    assert loaded.model_format == 1 and loaded.trust_policy is None and len(loaded.known_states) == len(model.llms)
    df = pd.DataFrame({"prompt": latent_model["prompts"]})
    for llm in (model.llms[0], model.llms[5]):  # scored from all its training answers, as before
        new, old = model.predict(None, df, {"llm": llm}), loaded.predict(None, df, {"llm": llm})
        np.testing.assert_allclose(old["p_success"], new["p_success"], atol=1e-6)
        np.testing.assert_allclose(old["p_std"], new["p_std"], atol=1e-6)


def test_a_current_model_loads_without_a_note(latent_model, tmp_path, caplog):
    from assessors.routing.engine import load_assessor_model

    with caplog.at_level(logging.WARNING, logger="assessors.core.saved_model"):
        loaded = load_assessor_model(_save(latent_model["model"], tmp_path / "new"))
    assert loaded.model_format == MODEL_FORMAT and "format" not in caplog.text


def test_a_model_that_cannot_be_unpickled_is_one_line_naming_its_format_and_the_retraining(latent_model, tmp_path,
                                                                                             monkeypatch):
    """A model whose pickle names a class this version no longer has (here: a module that is gone)."""
    from assessors.routing.engine import load_assessor_model

    mod = tmp_path / "gone_assessors_module.py"
    mod.write_text("from assessors.core.pyfunc import AssessorModel\n\n\nclass OldAssessorModel(AssessorModel):\n"
                   "    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import gone_assessors_module

    old = gone_assessors_module.OldAssessorModel.__new__(gone_assessors_module.OldAssessorModel)
    old.__dict__.update(vars(latent_model["model"]))
    path = _save(old, tmp_path / "unloadable")
    monkeypatch.delitem(sys.modules, "gone_assessors_module")
    mod.unlink()
    with pytest.raises(ConfigError) as e:
        load_assessor_model(path)
    msg = str(e.value)
    assert "\n" not in msg and e.value.__cause__ is None
    assert "cannot be loaded by assessors with format 2" in msg and "ModuleNotFoundError" in msg
    assert "retrain it with `python train.py`" in msg
