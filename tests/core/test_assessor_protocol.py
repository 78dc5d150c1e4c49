"""One suite every assessor family passes (as scikit-learn's ``parametrize_with_checks`` checks estimators).

Each family is fitted once on a small slice of real results (Open LLM Leaderboard v2, three BBH
subtasks, 16 training LLMs, unigram features) and checked against the protocol of
:mod:`assessors.core.protocol`: ``fit`` returns self and leaves its fitted state in attributes ending
in ``_``; evidence -> state -> ``(p, p_std)`` with the documented shapes; the batched and reference
paths agree with the one-LLM path; clone and pickle round trips; typed errors on bad evidence.
"""
from __future__ import annotations

import pickle
import re
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from assessors.core.evidence import Evidence, MissingReferenceError
from assessors.core.protocol import Assessor
from assessors.errors import DataError, NoPosteriorError

SUBTASKS = ["bbh_navigate", "bbh_sports_understanding", "bbh_web_of_lies"]
ROOT = Path(__file__).resolve().parents[2]


def _families():
    from sklearn.linear_model import LogisticRegression
    from xgboost import XGBClassifier

    from assessors.classifiers.grid import ParamGrid
    from assessors.core.generic import GenericAssessor
    from assessors.core.latent import LatentAssessor
    from assessors.core.latent_stream import StreamingLatentAssessor
    from assessors.core.specific import SpecificAssessor

    latent = dict(dims=2, hidden_sizes=(16,), n_members=1, max_epochs=6, patience=2, residual_dims=8, num_threads=1)
    return {
        "generic": GenericAssessor(ParamGrid(XGBClassifier(n_estimators=30, max_depth=3, n_jobs=1,
                                                           tree_method="hist", random_state=0))),
        # one candidate: no choice to make, so no cross-validation (its choosing is tested elsewhere)
        "specific": SpecificAssessor({"lr": ParamGrid(LogisticRegression(C=0.3, solver="liblinear"))}),
        "latent": LatentAssessor(**latent),
        "latent_stream": StreamingLatentAssessor(**latent),
    }


FAMILIES = ["generic", "specific", "latent", pytest.param("latent_stream", marks=pytest.mark.slow)]
#: Families whose predictions carry a spread (the others give ``p_std=None``).
SPREAD = {"latent", "latent_stream"}


@pytest.fixture(scope="module")
def data(data_dir):
    from assessors.data.loaders.open_llm_leaderboard_v2 import load_open_llm_leaderboard_v2
    from assessors.features.ngrams import UnigramFeaturizer

    res = load_open_llm_leaderboard_v2(root=data_dir, subtasks=SUBTASKS, download=False)
    rng = np.random.default_rng(0)
    ids = np.array(res.instance_ids)[rng.permutation(len(res.instance_ids))]
    llms = list(np.array(res.llms)[rng.permutation(len(res.llms))])
    train_ids, test_ids = list(ids[:300]), list(ids[300:380])
    feat = UnigramFeaturizer(max_features=150).fit(res.prompts(train_ids))
    X, X_test = feat.transform(res.prompts(train_ids)), feat.transform(res.prompts(test_ids))
    train, new = llms[:16], llms[16:20]
    return {"X": X, "S": res.matrix(train, train_ids), "X_test": X_test, "S_new": res.matrix(new, train_ids),
            "ref": np.sort(rng.choice(len(train_ids), 25, replace=False)), "feat": feat, "train_llms": train,
            "train_ids": train_ids, "results": res}


_FITTED: dict = {}


@pytest.fixture
def fitted(data, request):
    """``(unfitted, fitted)`` of the family named by the test's ``family`` parameter, fitted once."""
    name = request.node.callspec.params["family"]
    if name not in _FITTED:
        est = _families()[name]
        _FITTED[name] = (est, clone(est).fit(data["X"], data["S"], data["ref"]))
    return _FITTED[name]


def _evidence(data, k=0, cols=None) -> Evidence:
    cols = np.arange(data["X"].shape[0]) if cols is None else cols
    return Evidence(data["X"][cols], data["S_new"][k, cols])


@pytest.mark.parametrize("family", FAMILIES)
def test_fit_returns_self_and_keeps_its_state_in_underscore_attributes(data, family):
    est = _families()[family]
    assert isinstance(est, Assessor)
    params = set(est.get_params(deep=False))
    assert est.fit(data["X"], data["S"], data["ref"]) is est
    state = [k for k in vars(est) if k not in params and not k.startswith("_")]
    assert state and all(k.endswith("_") for k in state), state
    with pytest.raises(NotFittedError):
        clone(est).describe_reference(data["S_new"][:, data["ref"]])


@pytest.mark.parametrize("family", FAMILIES)
def test_evidence_to_state_to_predictions_with_their_spread(data, fitted, family):
    _, est = fitted
    m = len(data["X_test"])
    state = est.describe(_evidence(data))
    p, std = est.predict_state(data["X_test"], state)
    assert p.shape == (m,) and np.all((p >= 0) & (p <= 1)) and np.ptp(p) > 0
    if family in SPREAD:
        assert std.shape == (m,) and np.all(std >= 0) and np.ptp(std) > 0
    else:
        assert std is None
    P, STD = est.predict_states(data["X_test"], [state, est.describe(_evidence(data, 1))])
    assert P.shape == (2, m) and (STD is None) == (family not in SPREAD)
    np.testing.assert_allclose(P[0], p, atol=1e-5)
    assert not np.allclose(P[0], P[1])  # two LLMs' states predict differently


@pytest.mark.parametrize("family", FAMILIES)
def test_batched_known_and_reference_paths_agree_with_one_llm(data, fitted, family):
    _, est = fitted
    X, S, ref = data["X"], data["S_new"][:2], data["ref"]
    known = est.describe_known(X, S)
    assert len(known) == 2
    for k in range(2):
        one = est.predict_state(data["X_test"], est.describe(Evidence(X, S[k])))[0]
        np.testing.assert_allclose(est.predict_state(data["X_test"], known[k])[0], one, atol=1e-5)
    R = S[:, ref]
    by_ref = est.predict_states(data["X_test"], est.describe_reference(R))[0]
    np.testing.assert_allclose(by_ref, est.predict_proba(data["X_test"], R), atol=1e-5)
    from_evidence = est.predict_state(data["X_test"], est.describe(Evidence(X[ref], R[0])))[0]
    np.testing.assert_allclose(by_ref[0], from_evidence, atol=1e-5)


@pytest.mark.parametrize("family", FAMILIES)
def test_clone_and_pickle_round_trips(data, fitted, family):
    unfitted, est = fitted
    twin = clone(est)
    assert twin.get_params(deep=False).keys() == unfitted.get_params(deep=False).keys()
    assert not any(k.endswith("_") and not k.startswith("_") for k in vars(twin))
    back = pickle.loads(pickle.dumps(est))
    ev = _evidence(data, 2)
    p0, s0 = est.predict_state(data["X_test"], est.describe(ev))
    p1, s1 = back.predict_state(data["X_test"], back.describe(ev))
    np.testing.assert_allclose(p1, p0, atol=1e-6)
    assert (s0 is None) == (s1 is None)


@pytest.mark.parametrize("family", FAMILIES)
def test_bad_evidence_is_a_typed_error_naming_the_fix(data, fitted, family):
    _, est = fitted
    with pytest.raises(DataError, match="0, 1 or missing"):
        Evidence(data["X"][:3], [0, 0.5, 1])
    with pytest.raises(DataError, match="featurize the evidence prompts with the model's featurizer"):
        est.describe(Evidence(data["X"][:3, :7], [0, 1, 1]))
    with pytest.raises(DataError, match="must be an assessors.core.evidence.Evidence"):
        est.describe((data["X"][:3], [0, 1, 1]))
    off_reference = np.setdiff1d(np.arange(len(data["X"])), data["ref"])[:60]
    if family == "generic":  # the paper's assessor conditions on the reference set only
        with pytest.raises(MissingReferenceError, match=r"assessor=latent.*\d+ of its 25 reference prompts") as e:
            est.describe(_evidence(data, 0, off_reference))
        # a few BBH prompts share their bag of words with another: those count as found
        assert isinstance(e.value, NoPosteriorError) and len(e.value.missing) >= 20
        with pytest.raises(NoPosteriorError, match="adaptive onboarding.*assessor=latent"):
            est.require_posterior("adaptive onboarding")
    else:
        p, _ = est.predict_state(data["X_test"], est.describe(_evidence(data, 0, off_reference)))
        assert p.shape == (len(data["X_test"]),)


def test_every_option_of_the_assessor_config_group_is_a_protocol_family(compose):
    """The options of conf/assessor/ are interchangeable: each builds an Assessor with the one ``fit``."""
    import inspect

    from hydra.utils import instantiate

    names = sorted(p.stem for p in (ROOT / "conf" / "assessor").glob("*.yaml"))
    assert {"paper_generic", "latent", "specific"} <= set(names)
    for name in names:
        est = instantiate(compose([f"assessor={name}"]).assessor)
        assert isinstance(est, Assessor), name
        params = list(inspect.signature(est.fit).parameters)  # positional: the streaming one names S "answers"
        assert len(params) == 4 and params[0] == "X" and params[2:] == ["ref_index", "validation"], name


def test_no_capability_branch_outside_the_families():
    """Callers call the protocol; the trust layer tests nothing about a family (no capability, type or
    attribute check on the assessor)."""
    allowed = {"assessors/tasks/calibrate_task.py", "assessors/routing/setup.py"}
    hits = []
    for path in (ROOT / "assessors").rglob("*.py"):
        rel = path.relative_to(ROOT).as_posix()
        text = path.read_text()
        if rel not in allowed and re.search(r"capability\([^)]*has_posterior", text):
            hits.append(rel)
        if rel.startswith("assessors/trust/") and re.search(r"(capability|hasattr|getattr|isinstance)\(\s*assessor\b", text):
            hits.append(rel)
    assert not hits, f"capability branches outside the families: {hits}"


@pytest.mark.parametrize("family", FAMILIES)
def test_the_engine_and_the_pyfunc_model_serve_every_family_through_the_protocol(data, fitted, family):
    """One code path for every family: known LLMs by their training answers, new ones by evidence or by
    reference results; ``p_std`` only where the family has a spread."""
    import pandas as pd

    from assessors.core.pyfunc import AssessorModel
    from assessors.routing.engine import Engine

    _, est = fitted
    ref_ids = [data["train_ids"][i] for i in data["ref"]]
    model = AssessorModel(est, data["feat"], ref_ids, data["S"][:, data["ref"]], data["train_llms"],
                          known_states=est.describe_known(data["X"], data["S"], data["ref"]))
    engine = Engine(model)
    engine.register_known(data["train_llms"][:2])
    engine.registry.register("new", evidence=_evidence(data, 3))
    engine.registry.register("by_reference", data["S_new"][3, data["ref"]])
    entries = engine.resolve(None)
    P, STD = engine.score_with_spread(data["X_test"], entries)
    assert P.shape == (4, len(data["X_test"])) and (STD is None) == (family not in SPREAD)
    np.testing.assert_allclose(P[2], est.predict_state(data["X_test"], est.describe(_evidence(data, 3)))[0], atol=1e-5)
    np.testing.assert_allclose(P[0], est.predict_state(data["X_test"], model.known_states[0])[0], atol=1e-5)
    np.testing.assert_allclose(P[3], est.predict_proba(data["X_test"], data["S_new"][3, data["ref"]]), atol=1e-5)
    prompts = data["results"].prompts(data["train_ids"][:5])
    out = model.predict(None, pd.DataFrame({"prompt": prompts}), {"llm": data["train_llms"][0]})
    assert ("p_std" in out) == (family in SPREAD)
    np.testing.assert_allclose(out["p_success"], engine.score(data["feat"].transform(prompts), entries[:1])[0],
                               atol=1e-5)
    y = data["S_new"][3]
    ev = model.predict(None, pd.DataFrame({"prompt": prompts}),
                       {"evidence_prompts": data["results"].prompts(data["train_ids"]),
                        "evidence_success": np.where(np.isnan(y), -1.0, y).tolist()})
    np.testing.assert_allclose(ev["p_success"], est.predict_state(data["X"][:5], est.describe(_evidence(data, 3)))[0],
                               atol=1e-5)


@pytest.mark.parametrize("family", FAMILIES)
def test_the_trust_statistics_every_family_gives(data, fitted, family):
    """What the trust report calls: the state from some reference answers, the prediction with its draws
    and accuracy band, held-out predictions of the answered items, the training population's accuracy."""
    _, est = fitted
    X_ref, r = data["X"][data["ref"]], data["S_new"][0, data["ref"]].copy()
    r[::3] = np.nan  # some reference prompts not evaluated
    ev = Evidence(X_ref, r)
    partial = est.predict_state(data["X_test"], est.describe_answered(ev))[0]
    np.testing.assert_allclose(partial, est.predict_states(data["X_test"], est.describe_reference(r[None]))[0][0],
                               atol=1e-5)
    m, n_obs = len(data["X_test"]), ev.n_answered
    st = est.trust_statistics(ev, data["X_test"], level=0.9, n_samples=60, rng=np.random.default_rng(0), seed=0)
    np.testing.assert_allclose(st.p_target, partial, atol=1e-5)
    assert st.P_target.shape[1] == m and st.P_answered.shape == (st.P_target.shape[0], n_obs)
    assert np.all((st.P_target >= 0) & (st.P_target <= 1)) and np.all((st.P_answered >= 0) & (st.P_answered <= 1))
    lo, hi = st.accuracy_band
    assert 0 <= lo <= st.expected_accuracy <= hi <= 1
    # draws vary only where the family has a spread; a distance from the population only there too
    assert (np.ptp(st.P_target, axis=0).max() > 0) == (family in SPREAD)
    assert np.isfinite([st.distance, st.distance_max]).all() == (family in SPREAD)
    held = est.held_out_predictions(ev)
    assert held.shape == (n_obs,) and np.all((held >= 0) & (held <= 1))
    acc = est.population_accuracy(data["X_test"], data["S"][:, data["ref"]])
    assert acc.shape == (len(data["S"]),) and np.all((acc >= 0) & (acc <= 1)) and np.ptp(acc) > 0
    assert est.project(data["X_test"]).shape[0] == m
    assert isinstance(est.family_name, str) and est.family_name != Assessor.family_name
