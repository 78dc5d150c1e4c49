"""``experiment=trust_frontier``'s scenario scoring on a tiny real split, for both assessor families."""
import numpy as np
import pytest

TINY = ["data.subtasks=[bbh_navigate,bbh_sports_understanding]", "features=unigram", "features.max_features=50",
        "llm_split.n_train=12", "llm_split.n_val=4", "llm_split.n_test=3", "selector.size=30",
        "classifier.param_grid.n_estimators=[30]", "paper_generic_classifier.param_grid.n_estimators=[30]", "classifier.param_grid.max_depth=[2]"]


@pytest.mark.slow
@pytest.mark.parametrize("assessor", ["generic", "latent"])
def test_a_scenario_scores_every_test_llms_verdict(compose, assessor):
    from assessors.tasks.trust_eval import SUMMARY, evaluate_scenario

    over = TINY + ([] if assessor == "generic" else ["assessor=latent", "assessor.max_epochs=5",
                                                      "assessor.n_members=1"])
    rows, summary = evaluate_scenario(compose(over), "tiny")
    assert len(rows) == summary["n_llms"] == 3 and set(SUMMARY) <= set(summary)
    assert set(rows["verdict"]) <= {"ok", "uncertain", "out of population"} and rows["scenario"].eq("tiny").all()
    assert np.isfinite(rows["expected_accuracy"]).all() and summary["chosen"]["fallback_kind"] in ("releveled", "recalibrated",
                                                                                                   "reference_only")
