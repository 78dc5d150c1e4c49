"""A new LLM described to the pyfunc model by its graded answers on any prompts (evidence params),
through a model logged with ``log_assessor_model`` and loaded back with ``mlflow.pyfunc.load_model``
(MLflow checks params against the signature and fills the ones a request leaves out)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest


def _save_and_load(model, prompts, path):
    import mlflow.pyfunc

    from assessors.core.pyfunc import PIP_REQUIREMENTS, assessor_signature

    mlflow.pyfunc.save_model(str(path), python_model=model, signature=assessor_signature(model, prompts),
                             pip_requirements=PIP_REQUIREMENTS)
    return mlflow.pyfunc.load_model(str(path))


@pytest.fixture(scope="module")
def logged_latent(tiny_latent, tmp_path_factory):
    """The tiny latent assessor logged to an MLflow run as train.py logs it, loaded back by its URI."""
    import mlflow.pyfunc

    from assessors.core.pyfunc import log_assessor_model
    from assessors.tracking import MlflowTracker

    m, res = tiny_latent["model"], tiny_latent["results"]
    root = tmp_path_factory.mktemp("mlflow")
    tracker = MlflowTracker(experiment="pyfunc-evidence", db_path=str(root / "m.db"), artifact_root=str(root / "a"))
    with tracker.start_run("log") as run:
        uri = log_assessor_model(run, m.assessor, m.featurizer, m.reference_ids, m.reference_success, m.llms,
                                 example_prompts=res.prompts(tiny_latent["test_ids"][:2]))
    return mlflow.pyfunc.load_model(uri)


@pytest.fixture(scope="module")
def loaded_generic(tiny, tmp_path_factory):
    """The tiny XGBoost (generic, no posterior) assessor saved and loaded through MLflow."""
    return _save_and_load(tiny["model"], tiny["results"].prompts(tiny["test_ids"][:2]),
                          tmp_path_factory.mktemp("pyfunc") / "generic")


def _evidence(t, llm, n=40):
    """``(prompts, answers)``: ``llm``'s real 0/1 results on ``n`` held-out prompts (not the reference set,
    not the scored prompts)."""
    ids = t["test_ids"][20:20 + n]
    y = t["results"].matrix([llm], ids)[0]
    assert not set(ids) & set(t["reference_ids"]) and np.isin(y, (0, 1)).all()
    return t["results"].prompts(ids), y


def test_evidence_params_give_the_latent_posterior_prediction(tiny_latent, logged_latent):
    m, res = tiny_latent["model"], tiny_latent["results"]
    prompts = res.prompts(tiny_latent["test_ids"][:10])
    df = pd.DataFrame({"prompt": prompts})
    got = {}
    for llm in tiny_latent["test_llms"][:3]:
        ev_prompts, y = _evidence(tiny_latent, llm)
        out = logged_latent.predict(df, params={"evidence_prompts": ev_prompts, "evidence_success": y.tolist()})
        assert list(out.columns) == ["p_success", "p_std"]
        # the latent assessor's own posterior from the same answers, and its posterior predictive
        post = m.assessor.posterior(m.featurizer.transform(ev_prompts), y[None, :])
        p, std = m.assessor.predict_posterior(m.featurizer.transform(prompts), post)
        np.testing.assert_allclose(out["p_success"], p[0], atol=1e-6)
        np.testing.assert_allclose(out["p_std"], std[0], atol=1e-6)
        assert (out["p_std"] > 0).all()
        got[llm] = (out["p_success"].to_numpy(), y.mean())
    # the answers move the prediction: the LLM that answered best gets the higher mean P(success)
    best, worst = max(got, key=lambda k: got[k][1]), min(got, key=lambda k: got[k][1])
    assert got[best][1] > got[worst][1] and got[best][0].mean() > got[worst][0].mean()


def test_ungraded_evidence_is_left_out(tiny_latent, logged_latent):
    """-1 (not graded, as in reference_success) is the same as leaving the prompt out; the spread
    narrows with more graded answers."""
    df = pd.DataFrame({"prompt": tiny_latent["results"].prompts(tiny_latent["test_ids"][:5])})
    ev_prompts, y = _evidence(tiny_latent, tiny_latent["test_llms"][0])
    part = np.where(np.arange(len(y)) < 8, y, -1.0)
    with_ungraded = logged_latent.predict(df, params={"evidence_prompts": ev_prompts, "evidence_success": part.tolist()})
    short = logged_latent.predict(df, params={"evidence_prompts": ev_prompts[:8], "evidence_success": y[:8].tolist()})
    full = logged_latent.predict(df, params={"evidence_prompts": ev_prompts, "evidence_success": y.tolist()})
    np.testing.assert_allclose(with_ungraded, short, atol=1e-6)
    assert (short["p_std"] > full["p_std"]).mean() > 0.5


def test_the_other_params_still_work_through_the_logged_model(tiny_latent, logged_latent):
    m, res = tiny_latent["model"], tiny_latent["results"]
    prompts = res.prompts(tiny_latent["test_ids"][:5])
    df = pd.DataFrame({"prompt": prompts})
    by_name = logged_latent.predict(df, params={"llm": m.llms[1]})
    np.testing.assert_allclose(by_name["p_success"], m.score(prompts, m.reference_success[1]), atol=1e-6)
    r = res.matrix([tiny_latent["test_llms"][0]], tiny_latent["reference_ids"])[0]
    by_ref = logged_latent.predict(df, params={"reference_success": r.tolist()})
    np.testing.assert_allclose(by_ref["p_success"], m.score(prompts, r), atol=1e-6)


def test_bad_evidence_params_are_400s(tiny_latent, logged_latent):
    from assessors.core.pyfunc import AssessorParamError

    m = tiny_latent["model"]
    df = pd.DataFrame({"prompt": ["Is the sky blue?"]})
    ev_prompts, y = _evidence(tiny_latent, tiny_latent["test_llms"][0], n=4)
    cases = [
        ({"evidence_prompts": ev_prompts, "evidence_success": [1.0, 0.0]}, "has 4 prompts but evidence_success has 2"),
        ({"evidence_prompts": ev_prompts, "evidence_success": [1.0, 0.5, 0.0, 1.0]}, "must be 0, 1 or missing.*item 1 is 0.5"),
        ({"evidence_prompts": ev_prompts, "evidence_success": [1.0, 2.0, 0.0, 1.0]}, "must be 0, 1 or missing.*item 1 is 2.0"),
        ({"evidence_prompts": [], "evidence_success": []}, "evidence is empty"),
        ({"evidence_prompts": ev_prompts, "evidence_success": [-1.0] * 4}, "evidence is empty: none of the 4"),
        ({"evidence_prompts": ev_prompts}, "evidence_prompts given without evidence_success"),
        ({"evidence_success": y.tolist()}, "evidence_success given without evidence_prompts"),
        ({"evidence_prompts": ev_prompts, "evidence_success": y.tolist(), "llm": m.llms[0]}, "exactly one of"),
        ({"evidence_prompts": ev_prompts, "evidence_success": y.tolist(),
          "reference_success": [1.0] * len(m.reference_ids)}, "exactly one of"),
    ]
    for params, message in cases:
        with pytest.raises(AssessorParamError, match=message) as err:
            logged_latent.predict(df, params=params)
        # the code mlflow models serve answers with HTTP 400
        assert err.value.error_code == "INVALID_PARAMETER_VALUE" and err.value.get_http_status_code() == 400
    with pytest.raises(AssessorParamError, match="pass params="):  # nothing given at all: every param defaulted
        logged_latent.predict(df)


def test_evidence_for_a_model_without_posterior_names_the_latent_assessor(tiny, loaded_generic):
    from assessors.core.pyfunc import AssessorParamError
    from assessors.errors import NoPosteriorError

    ev_prompts, y = _evidence(tiny, tiny["test_llms"][0], n=4)
    df = pd.DataFrame({"prompt": ["Is the sky blue?"]})
    with pytest.raises(AssessorParamError, match=r"assessor=latent.*GenericAssessor.*reference_success") as err:
        loaded_generic.predict(df, params={"evidence_prompts": ev_prompts, "evidence_success": y.tolist()})
    assert isinstance(err.value, NoPosteriorError) and err.value.get_http_status_code() == 400
    # the reference path of the same model is unaffected by the new params' defaults
    r = tiny["results"].matrix([tiny["test_llms"][0]], tiny["reference_ids"])[0]
    out = loaded_generic.predict(df, params={"reference_success": np.where(np.isnan(r), -1.0, r).tolist()})
    assert list(out.columns) == ["p_success"]


def test_mlflow_scoring_server_takes_evidence_and_answers_bad_evidence_with_400(tiny_latent, logged_latent):
    """The app ``mlflow models serve`` runs, in process."""
    from fastapi.testclient import TestClient
    from mlflow.pyfunc import scoring_server

    ev_prompts, y = _evidence(tiny_latent, tiny_latent["test_llms"][0], n=10)
    records = [{"prompt": p} for p in tiny_latent["results"].prompts(tiny_latent["test_ids"][:3])]
    with TestClient(scoring_server.init(logged_latent)) as c:
        ok = c.post("/invocations", json={"dataframe_records": records, "params": {
            "evidence_prompts": ev_prompts, "evidence_success": [int(v) for v in y]}})
        assert ok.status_code == 200, ok.text
        preds = ok.json()["predictions"]
        assert len(preds) == 3 and all(0 < p["p_success"] < 1 and p["p_std"] > 0 for p in preds)
        bad = c.post("/invocations", json={"dataframe_records": records, "params": {
            "evidence_prompts": ev_prompts, "evidence_success": [1, 0]}})
        assert bad.status_code == 400 and "has 10 prompts but evidence_success has 2" in bad.text
