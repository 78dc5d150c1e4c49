"""train.py's headline is what is served: the served column of its table equals what the logged model,
loaded into predict.py's engine, serves each test LLM from its reference results."""
from __future__ import annotations

import mlflow
import numpy as np
import pandas as pd
import pytest
from omegaconf import OmegaConf

from assessors.metrics import evaluate
from assessors.reporting.run_report import metric_key

# a small latent assessor on three BBH subtasks (text features: the model is logged only with them)
TINY_LATENT = ["assessor=latent", "data.subtasks=[bbh_navigate,bbh_snarks,bbh_sports_understanding]",
               "selector.size=30", "assessor.n_members=1", "assessor.hidden_sizes=[16]", "assessor.max_epochs=8",
               "assessor.residual_dims=8", "assessor.item_neighbours=0", "trust.ood_fallback=null",
               "compare.specific=false", "compare.all_train_data=false", "compare.random_selector=false",
               "compare.paper_generic=false", "plots=false"]
# every verdict switches the LLM to the re-levelled fallback: served and raw predictions then differ
ALWAYS_FALLBACK = "+serve.trust.posterior.fallback_on=[ok,uncertain,'out of population']"


def served_by_engine(cfg, uri: str, llms: list[str], ids: list[str], R: np.ndarray, prompts: list[str]):
    """``(P (n_llms, n_prompts), predictor names)``: the logged model in predict.py's engine, each LLM
    registered by its reference results, the trust reports about the scored prompts (``mode=score``)."""
    from assessors.routing.setup import build_engine
    from assessors.tasks.predict_common import trust_about_prompts

    trust = OmegaConf.to_container(cfg.serve.trust, resolve=True)
    engine = build_engine(uri, trust=trust, tracking_uri=f"sqlite:///{cfg.tracking.db_path}")
    for llm, r in zip(llms, R):
        engine.registry.register(llm, dict(zip(ids, r)))
    pcfg = OmegaConf.create({"trust": trust, "server": {"onboarding": {"trust_target_max": cfg.serve.trust_target_max}}})
    trust_about_prompts(pcfg, engine, prompts)
    names, P = engine.predict(prompts, llms)
    assert names == llms
    return P, {e.name: e.predictor_name for e in engine.resolve(llms)}


@pytest.mark.slow
@pytest.mark.parametrize("extra", [[], [ALWAYS_FALLBACK]], ids=["stored_policy", "always_fallback"])
def test_served_column_is_what_the_logged_model_serves(compose, extra):
    from assessors.tasks.prepare import prepare
    from assessors.tasks.train import raw_name, served_name, train_assessors

    cfg = compose(TINY_LATENT + extra)
    summary = train_assessors(cfg)
    assert summary["auc/headline"] == summary[f"auc/{metric_key(served_name('latent'))}"]
    client = mlflow.tracking.MlflowClient(f"sqlite:///{cfg.tracking.db_path}")
    (run,) = client.search_runs([client.get_experiment_by_name(cfg.tracking.experiment).experiment_id])
    table = pd.read_csv(mlflow.artifacts.download_artifacts(run_id=run.info.run_id,
                                                            artifact_path="tables/served_per_llm.csv",
                                                            tracking_uri=f"sqlite:///{cfg.tracking.db_path}"),
                        index_col="llm")
    prep = prepare(cfg)  # the same split and features (seeded), to read the test LLMs' answers
    ref_ids = mlflow.artifacts.load_dict(f"{run.info.artifact_uri}/reference_ids.json")["reference_ids"]
    llms = prep.llms["test"]
    assert list(table.index) == llms
    P, predictors = served_by_engine(cfg, run.data.tags["model_uri"], llms, ref_ids,
                                     prep.results.matrix(llms, ref_ids), prep.results.prompts(prep.inst["test"]))
    S = prep.S("test", "test")
    for k, llm in enumerate(llms):
        keep = ~np.isnan(S[k])
        got = evaluate(S[k][keep], P[k][keep])
        assert predictors[llm] == table.loc[llm, "served"]
        assert got["auc"] == pytest.approx(table.loc[llm, "auc_served"], abs=1e-4), llm
        assert got["ece"] == pytest.approx(table.loc[llm, "ece_served"], abs=1e-4), llm
    if extra:  # every LLM on the fallback: the served column is not the raw one
        assert set(table["served"]) == {"recalibrated"}
        assert summary[f"ece/{metric_key(served_name('latent'))}"] != summary[f"ece/{metric_key(raw_name('latent'))}"]


def test_train_serves_with_predict_defaults(compose):
    """train.py's served headline uses predict.py's trust defaults: the two config files agree."""
    train, predict = compose(), compose(config_name="predict")
    assert OmegaConf.to_container(train.serve.trust) == OmegaConf.to_container(predict.trust)
    assert train.serve.trust_target_max == predict.server.onboarding.trust_target_max


def test_the_latent_assessor_is_the_default_and_the_paper_one_is_a_column(compose):
    from assessors.tasks.wrapper import method_name

    cfg = compose()
    assert method_name(cfg) == "latent" and cfg.compare.paper_generic
    assert method_name(OmegaConf.create({"assessor": cfg.paper_generic})) == "paper_generic"
    # the paper's presets train the paper's assessor
    for preset in ("paper_in_distribution", "llm_frontier", "llm_random", "kor_llm_split", "ood_musr"):
        assert method_name(compose([f"experiment={preset}"])) == "paper_generic", preset
    # the trust evaluation judges the assessor that is served: the default one
    assert method_name(compose(["experiment=trust_frontier"])) == "latent"
