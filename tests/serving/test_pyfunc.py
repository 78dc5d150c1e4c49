"""The logged pyfunc model answers the LLM it is asked about, through MLflow's own params handling."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest


@pytest.fixture(scope="module")
def loaded(tiny, tmp_path_factory):
    """The tiny assessor saved with the signature train.py logs, loaded back through MLflow, which
    fills every param a request leaves out with the signature's default."""
    import mlflow.pyfunc

    from assessors.core.pyfunc import PIP_REQUIREMENTS, assessor_signature

    m = tiny["model"]
    path = tmp_path_factory.mktemp("pyfunc") / "assessor"
    prompts = tiny["results"].prompts(tiny["test_ids"][:2])
    mlflow.pyfunc.save_model(str(path), python_model=m, signature=assessor_signature(m, prompts),
                             pip_requirements=PIP_REQUIREMENTS)
    return mlflow.pyfunc.load_model(str(path))


def test_llm_param_selects_that_llm(tiny, loaded):
    m = tiny["model"]
    prompts = tiny["results"].prompts(tiny["test_ids"][:10])
    df = pd.DataFrame({"prompt": prompts})
    got = {n: loaded.predict(df, params={"llm": n})["p_success"].to_numpy() for n in m.llms[:4]}
    for k, n in enumerate(m.llms[:4]):
        np.testing.assert_allclose(got[n], m.score(prompts, m.reference_success[k]), atol=1e-6)
    assert len({tuple(np.round(v, 6)) for v in got.values()}) > 1  # different LLMs, different answers


def test_reference_success_scores_a_new_llm(tiny, loaded):
    m, res = tiny["model"], tiny["results"]
    prompts = res.prompts(tiny["test_ids"][:10])
    r = res.matrix([tiny["test_llms"][0]], tiny["reference_ids"])[0]
    got = loaded.predict(pd.DataFrame({"prompt": prompts}),
                         params={"reference_success": np.where(np.isnan(r), -1.0, r).tolist()})
    np.testing.assert_allclose(got["p_success"], m.score(prompts, r), atol=1e-6)


def test_bad_params_are_clear_errors(tiny, loaded):
    from assessors.core.pyfunc import AssessorParamError

    df = pd.DataFrame({"prompt": ["Is the sky blue?"]})
    n_ref = len(tiny["reference_ids"])
    with pytest.raises(AssessorParamError, match="unknown LLM 'no-such-llm': this model knows 20 LLMs"):
        loaded.predict(df, params={"llm": "no-such-llm"})
    with pytest.raises(AssessorParamError, match="not both"):
        loaded.predict(df, params={"llm": tiny["model"].llms[0], "reference_success": [1.0] * n_ref})
    with pytest.raises(AssessorParamError, match="pass params="):
        loaded.predict(df)
    with pytest.raises(AssessorParamError, match=f"must have {n_ref} values"):
        loaded.predict(df, params={"reference_success": [1.0, 0.0]})
