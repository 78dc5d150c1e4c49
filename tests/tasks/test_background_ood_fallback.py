"""train.py's OOD fallback choice started early in a background process: the same record as fitted in place."""
from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor

import pytest
from hydra.utils import instantiate

from assessors.tasks.train_trust import fit_prompt_ood, start_ood_fallback, with_ood_fallback

from ..conftest import small_prep

prep = small_prep("background_ood", ["bbh_navigate", "bbh_snarks", "bbh_sports_understanding"], n_train=14, n_val=4,
                  n_test=2)
# a small latent assessor: the choice refits it on each fold of subtasks
TINY = ["assessor=latent", "features=success_pattern", "assessor.n_members=2", "assessor.hidden_sizes=[16]",
        "assessor.max_epochs=4", "assessor.residual_dims=4", "assessor.item_neighbours=0", "selector.size=30"]


@pytest.mark.slow
def test_choice_in_a_background_process_equals_the_choice_in_place(compose, prep):
    cfg = compose(TINY)
    assessor = instantiate(cfg.assessor)  # only asked whether it has a posterior
    prompt_ood = fit_prompt_ood(cfg, prep, assessor)
    here = with_ood_fallback(cfg, prep, {"options": {}}, prompt_ood)
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        future = start_ood_fallback(cfg, prep, pool)
        assert future is not None
        there = with_ood_fallback(cfg, prep, {"options": {}}, prompt_ood, ood_fallback=future)
    assert here["ood_fallback"]["chosen_by"].startswith("mean AUC on 3 held-out folds")
    assert there == here  # the AUCs and bands too, to the last bit


@pytest.mark.parametrize("overrides", [["assessor=paper_generic", "features=success_pattern"],
                                       TINY + ["trust.ood_fallback=null"], TINY + ["trust.prompt_ood=null"],
                                       TINY + ["trust.fit_policy=false"]], ids=["no_posterior", "no_choice",
                                                                                "no_signal", "no_policy"])
def test_nothing_starts_when_the_choice_would_not_be_made(compose, prep, overrides):
    class NoPool:
        def submit(self, *args):
            raise AssertionError("nothing should start")

    assert start_ood_fallback(compose(overrides), prep, NoPool()) is None
