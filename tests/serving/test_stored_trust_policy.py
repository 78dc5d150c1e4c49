"""``train.py assessor=latent`` chooses the posterior trust thresholds on the validation LLMs and stores
them with the model; the loaded model's trust function (predict.py, the server, /health) uses them, an
explicit ``trust.posterior`` option wins, and a model without them keeps the stated defaults."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

TINY_LATENT = [
    "assessor=latent", "data.subtasks=[bbh_navigate,bbh_sports_understanding,bbh_web_of_lies]",
    "features=unigram", "features.max_features=200", "selector.size=30",
    "llm_split.n_train=20", "llm_split.n_val=8", "llm_split.n_test=4",
    "assessor.n_members=1", "assessor.hidden_sizes=[16]", "assessor.max_epochs=8", "assessor.residual_dims=8",
    "compare.specific=false", "compare.reference_only=false", "compare.all_train_data=false",
    "compare.random_selector=false", "plots=false",
]
STATED = {"misfit_alpha": 0.01, "range_margin": 0.02, "max_width": 0.15, "band_scale": 1.0, "auc_band_scale": 1.0,
          "muted_flags": [], "fallback_kind": "recalibrated", "fallback_flags": None, "ood_fallback": "reference_only",
          "fallback_slope_sd": 0.1, "ood_auc_bands": None, "ood_accuracy_bands": None}


@pytest.fixture(scope="module")
def trained(tmp_path_factory, data_dir):
    """A tiny latent assessor trained by the train task (MLflow store under a temporary directory)."""
    import mlflow
    from hydra import compose, initialize_config_dir

    from assessors.routing.engine import load_assessor_model
    from assessors.tasks.train import train_assessors
    out = tmp_path_factory.mktemp("stored_policy") / "outputs"
    with initialize_config_dir(config_dir=str(Path(__file__).resolve().parents[2] / "conf"), version_base="1.3"):
        cfg = compose("train", overrides=[f"paths.data_dir={data_dir}", f"paths.outputs={out}", *TINY_LATENT])
    train_assessors(cfg)
    tracking_uri = f"sqlite:///{out}/mlflow.db"
    mlflow.set_tracking_uri(tracking_uri)
    run = mlflow.search_runs(search_all_experiments=True).iloc[0]
    model = load_assessor_model(run["tags.model_uri"], tracking_uri)
    return {"model": model, "run": run, "out": out, "cfg": cfg}


def _ready(c, timeout: float = 60.0) -> dict:
    """``/health`` once the app has loaded and warmed up."""
    import time

    deadline = time.monotonic() + timeout
    while (r := c.get("/health")).status_code != 200 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert r.status_code == 200, r.text
    return r.json()


def _register(model, trust):
    """Trust report of one held-out LLM registered with ``trust`` options, and the policy applied."""
    from assessors.routing.engine import registry_for
    from assessors.routing.setup import trust_hook

    fn = trust_hook(model, trust)
    reg = registry_for(model, fn)
    entry = reg.register("new", model.reference_success[0].copy())
    return entry.trust, fn.policy.settings()


@pytest.mark.slow
def test_training_stores_the_policy_chosen_on_validation_llms(trained):
    import mlflow

    stored = trained["model"].trust_policy
    assert stored is not None, "train.py assessor=latent stored no trust policy with the model"
    assert stored["n_validation_llms"] == 8 and stored["source"] == "validated on 8 validation LLMs"
    assert set(stored["options"]) == set(STATED)
    steps = {"band_scale", "auc_band_scale", "thresholds", "fallback", "slope_sd"}
    assert steps <= set(stored["chosen_by"]) <= steps | {"max_width", "muted_flags"}  # the quiet rule's, if it acted
    # logged to MLflow: params and the JSON artifact
    run = trained["run"]
    assert run["tags.trust_policy.source"] == stored["source"]
    for k, v in stored["options"].items():
        assert run[f"params.trust_policy.{k}"] == str(v)
    local = mlflow.artifacts.download_artifacts(run_id=run["run_id"], artifact_path="trust/validated_policy.json",
                                                dst_path=str(trained["out"] / "dl"))
    assert json.load(open(local)) == stored
    assert run["metrics.time/trust_policy_fit_s"] > 0


@pytest.mark.slow
def test_the_loaded_model_applies_the_stored_policy_and_an_explicit_option_wins(trained):
    model = trained["model"]
    stored = model.trust_policy
    report, used = _register(model, {"enabled": True, "fallback": True, "posterior": {}})
    assert used == {"source": stored["source"], **stored["options"], "prompt_ood": model.prompt_ood.summary()}
    assert report["policy"] == used
    # whatever the store holds is what the loaded model applies (not a coincidence with the defaults)
    other = copy.copy(model)
    other.trust_policy = copy.deepcopy(stored)
    other.trust_policy["options"].update(misfit_alpha=0.0777, fallback_kind="reference_only", fallback_flags=["misfit"])
    _, used = _register(other, {"posterior": {}})
    assert (used["misfit_alpha"], used["fallback_kind"], used["fallback_flags"]) == (0.0777, "reference_only", ["misfit"])
    # trust.posterior sets one key: it wins, the others stay the stored ones
    _, over = _register(model, {"posterior": {"misfit_alpha": 0.1234, "seed": 1}})
    assert over["misfit_alpha"] == 0.1234
    assert {k: over[k] for k in STATED if k != "misfit_alpha"} == {k: v for k, v in stored["options"].items()
                                                                    if k != "misfit_alpha"}
    assert over["source"] == stored["source"] + "; trust.posterior sets misfit_alpha"


@pytest.mark.slow
def test_predict_config_and_health_name_the_source(trained, compose, monkeypatch):
    from fastapi.testclient import TestClient

    from assessors.serving.app import create_app
    from assessors.tasks.predict_common import engine_from_cfg

    model = trained["model"]
    engine = engine_from_cfg(compose(["tracking=none", "known_llms=all"], config_name="predict"), model=model)
    assert engine.registry.trust_fn.policy.settings()["source"] == model.trust_policy["source"]
    cfg = compose(["tracking=none", "+trust.posterior.fallback_kind=reference_only"], config_name="predict")
    assert engine_from_cfg(cfg, model=model).registry.trust_fn.policy.fallback_kind == "reference_only"
    assert engine.registry.trust_fn.policy.prompt_ood is model.prompt_ood
    off = compose(["tracking=none", "+trust.posterior.prompt_ood=false"], config_name="predict")
    assert engine_from_cfg(off, model=model).registry.trust_fn.policy.prompt_ood is None
    monkeypatch.setenv("TEST_POLICY_KEYS", "k" * 24)
    app = create_app({"auth": {"api_keys_env": ["TEST_POLICY_KEYS"]}}, engine=engine)
    with TestClient(app) as c:
        health = _ready(c)
    assert health["trust_policy"] == {"source": model.trust_policy["source"], **model.trust_policy["options"],
                                      "prompt_ood": model.prompt_ood.summary()}


@pytest.mark.slow
def test_adaptive_onboarding_reports_under_the_stored_policy(trained, compose):
    from types import SimpleNamespace

    import numpy as np

    from assessors.tasks.onboard import adaptive_trust

    model = trained["model"]
    X = np.asarray(model.assessor.reference_features_)
    runner = SimpleNamespace(selector_=SimpleNamespace(X_pool_=X, X_target_=X), asked_=np.arange(20),
                             answers_=model.reference_success[0, :20].astype(float))
    rep = adaptive_trust(compose(["tracking=none"], config_name="predict"), model, runner, "new")
    assert rep["policy"] == {"source": model.trust_policy["source"], **model.trust_policy["options"],
                             "prompt_ood": model.prompt_ood.summary()}
    assert rep["target"] == {"source": "pool", "n_prompts": len(X)}
    cfg = compose(["tracking=none", "+trust.posterior.range_margin=0.2"], config_name="predict")
    rep = adaptive_trust(cfg, model, runner, "new")
    assert rep["policy"]["range_margin"] == 0.2 and rep["policy"]["source"].endswith("sets range_margin")


@pytest.mark.slow
def test_a_model_without_stored_options_keeps_the_stated_defaults(trained):
    old = copy.copy(trained["model"])
    del old.trust_policy, old.prompt_ood  # a model pickled before the attributes existed
    report, used = _register(old, {"posterior": {}})
    assert used == {"source": "stated defaults", **STATED, "prompt_ood": None}
    assert report["policy"]["source"] == "stated defaults"
    _, over = _register(old, {"posterior": {"max_width": 0.3}})
    assert over == {"source": "stated defaults; trust.posterior sets max_width", **STATED, "max_width": 0.3,
                    "prompt_ood": None}


@pytest.mark.slow
def test_training_stores_the_prompt_side_signal_and_served_reports_use_it(trained, data_dir):
    """Prompts of a task the model never trained on are flagged out of distribution in a served report
    (reference-only fallback, AUC band down to chance); the training task's prompts are not; false turns it off."""
    import numpy as np

    from assessors.data.loaders.open_llm_leaderboard_v2 import load_open_llm_leaderboard_v2
    from assessors.routing.setup import trust_hook

    model = trained["model"]
    ood = model.prompt_ood
    assert ood is not None and ood.summary()["n_train"] > 0, "train.py stored no prompt-side signal"
    assert trained["run"]["params.trust_prompt_ood.max_share"] == str(ood.max_share)
    other = load_open_llm_leaderboard_v2(root=data_dir, subtasks=["musr_murder_mysteries"])
    X_far = model.featurizer.transform(other.prompts()[:80])
    X_near = np.asarray(model.assessor.reference_features_)
    # the tiny model's unigram features see MuSR stories as only partly foreign: a lower share threshold
    fn = trust_hook(model, {"posterior": {"max_ood_share": 0.25}})
    far, _ = fn.with_target(target=X_far)(model.reference_success[0].copy())
    near, _ = fn.with_target(target=X_near)(model.reference_success[0].copy())
    chosen = model.trust_policy["options"]["ood_fallback"]  # chosen on held-out subtasks of the training prompts
    bands = model.trust_policy["options"]["ood_auc_bands"]
    assert "prompts_out_of_distribution" in far["flags"] and far["fallback"]["predictor"] == chosen
    # the AUC band of what it is served: the fallback's on held-out subtasks, not the latent posterior's
    low = min(bands[chosen][0], far["auc_chance_low"])  # down to chance, as the verdict's own band
    assert (far["fallback"]["auc_band"], far["fallback"]["auc_band_from"]) == ([low, bands[chosen][1]], "held-out subtasks")
    assert (near["fallback"]["auc_band"], near["fallback"]["auc_band_from"]) == (near["auc_band"], "posterior")
    # and its accuracy: the fallback's mean prediction on the target prompts, shifted by its held-out errors,
    # the band widened to hold the posterior one
    errors = model.trust_policy["options"]["ood_accuracy_bands"][chosen]
    m, post = far["fallback"]["expected_accuracy"], far["accuracy_band"]
    assert far["fallback"]["accuracy_band_from"] == "held-out subtasks"
    assert far["fallback"]["accuracy_band"] == pytest.approx(
        list(np.clip([min(m + errors[0], post[0]), max(m + errors[1], post[1])], 0, 1)))
    assert (near["fallback"]["expected_accuracy"], near["fallback"]["accuracy_band"]) == (
        near["expected_accuracy"], near["accuracy_band"])
    assert far["prompt_ood_share"] > 0.25 > near["prompt_ood_share"]
    assert "prompts_out_of_distribution" not in near["flags"]
    assert far["auc_band"][0] <= far["auc_chance_low"] < 0.5
    for kind in ("population", "reference_only", "releveled"):  # an explicit option wins over the stored one
        fn = trust_hook(model, {"posterior": {"max_ood_share": 0.25, "ood_fallback": kind}})
        rep, predictor = fn.with_target(target=X_far)(model.reference_success[0].copy())
        assert rep["fallback"]["predictor"] == kind == rep["policy"]["ood_fallback"]
        assert rep["fallback"]["auc_band"] == [min(bands[kind][0], rep["auc_chance_low"]), bands[kind][1]]
        p = predictor(X_far)
        assert p.shape == (len(X_far),) and ((p > 0) & (p < 1)).all()
    off_fn = trust_hook(model, {"posterior": {"prompt_ood": False, "max_ood_share": 0.25}})
    off, _ = off_fn.with_target(target=X_far)(model.reference_success[0].copy())
    assert off["prompt_ood_share"] is None and off["policy"]["prompt_ood"] is None


def test_the_switch_and_a_non_latent_assessor_store_nothing(tiny, compose):
    from hydra.utils import instantiate

    from assessors.tasks.train_trust import fit_trust_policy

    cfg = compose(["assessor=latent", "trust.fit_policy=false"])
    latent = instantiate(cfg.assessor)  # unfitted: only its capability is read before the switch
    assert fit_trust_policy(cfg, None, latent, []) is None
    assert fit_trust_policy(compose(["assessor=latent", "trust.validated_policy=null"]), None, latent, []) is None
    assert fit_trust_policy(compose(), None, tiny["model"].assessor, []) is None  # XGBoost: no posterior
    on = compose(["assessor=latent"])
    assert on.trust.fit_policy is True and on.trust.validated_policy._target_.endswith("ValidatedTrustPolicy")
    with pytest.raises(AttributeError):  # on by default: it goes on to read the split (here: none given)
        fit_trust_policy(on, None, latent, [])



@pytest.mark.slow
def test_training_chooses_the_ood_fallback_on_held_out_subtasks_and_logs_it(trained):
    """The 3 training subtasks are dealt into 3 folds; each candidate is scored on the validation LLMs;
    the best is stored, logged as a param and as ``trust/ood_fallback.json``."""
    import mlflow

    model, run = trained["model"], trained["run"]
    rec = model.trust_policy["ood_fallback"]
    assert rec["folds"] and len(rec["folds"]) == 3 and sorted(sum(rec["folds"], [])) == [
        "bbh_navigate", "bbh_sports_understanding", "bbh_web_of_lies"]
    finite = {k: v for k, v in rec["mean_auc"].items() if v is not None}
    assert set(finite) == {"releveled", "reference_only", "population"}
    assert rec["choice"] == max(finite, key=finite.get) == model.trust_policy["options"]["ood_fallback"]
    assert model.trust_policy["options"]["ood_auc_bands"] == rec["auc_band"] and set(rec["auc_band"]) == set(finite)
    assert all(lo <= finite[c] <= hi for c, (lo, hi) in rec["auc_band"].items())
    assert model.trust_policy["options"]["ood_accuracy_bands"] == rec["accuracy_error_band"]
    assert set(rec["accuracy_error_band"]) == set(finite)
    assert all(-1 <= lo <= hi <= 1 for lo, hi in rec["accuracy_error_band"].values())
    assert model.prompt_ood.population_ is not None and model.prompt_ood.summary()["population"] is True
    assert run["params.trust_policy.ood_fallback"] == rec["choice"]
    assert run[f"metrics.trust_ood_fallback.auc_{rec['choice']}"] == pytest.approx(finite[rec["choice"]])
    local = mlflow.artifacts.download_artifacts(run_id=run["run_id"], artifact_path="trust/ood_fallback.json",
                                                dst_path=str(trained["out"] / "dl_ood"))
    assert json.load(open(local)) == rec


@pytest.mark.slow
def test_training_stores_where_its_prompts_came_from(trained, data_dir):
    """The model records its training prompts' files (relative to the data dir) and ids, logged to the
    run too; they read back from the data dir as the training split's prompts."""
    import mlflow

    from assessors.data.training_prompts import read_training_prompts, training_files, training_ids
    from assessors.tasks.prepare import prepare

    record = trained["model"].training_prompts
    assert record is not None, "train.py stored no training prompts with the model"
    subtasks = ["bbh_navigate", "bbh_sports_understanding", "bbh_web_of_lies"]
    assert sorted(training_files(record)) == [f"open_llm_leaderboard_v2/prompts/{t}_prompts.csv" for t in subtasks]
    prep = prepare(trained["cfg"])  # the same split again (seeded)
    ids = training_ids(record)
    assert sorted(ids) == sorted(prep.inst["train"]) and record["n_ids"] == len(ids)
    assert record["n_without_file"] == 0
    assert set(trained["model"].reference_ids) <= set(ids)
    assert str(data_dir) not in json.dumps(record)
    df, _ = read_training_prompts(record, data_dir)
    assert df.set_index("instance_id").loc[ids, "prompt"].tolist() == prep.results.prompts(ids)
    run = trained["run"]
    assert run["tags.training_prompts.n"] == str(len(ids))
    local = mlflow.artifacts.download_artifacts(run_id=run["run_id"], artifact_path="data/training_prompts.json",
                                                dst_path=str(trained["out"] / "dl_prompts"))
    assert json.load(open(local)) == record
