"""Adaptive question selection on data simulated from the latent model: faster recovery than random,
determinism (resume), exploration, batches, stopping and bad configuration."""
from __future__ import annotations

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

from assessors.errors import ConfigError, DataError
from assessors.onboarding.adaptive import AdaptiveSelector
from tests.latent_sim import fit_simulated


@pytest.fixture(scope="module")
def sim():
    return fit_simulated()


def _answers(d, k):
    """New LLM ``k``'s simulated answer to pool prompt ``j``: the callback ``simulate`` asks."""
    return lambda j: d["S"][k, d["pool"][j]]


def _simulate(sim, new: int, n_max: int, **params):
    """An :class:`AdaptiveSelector` with ``params`` fitted on the pool, run on the ``new``-th new LLM for
    ``n_max`` questions: ``(selector, asked, answers)``."""
    model, d = sim
    sel = AdaptiveSelector(**params).fit(model, d["X"][d["pool"]])
    asked, y = sel.simulate(_answers(d, d["new"][new]), n_max=n_max)
    return sel, asked, y


def _errors(model, sel, d, n):
    """Per new LLM: |predicted - true| P(success) on the target prompts after ``n`` questions."""
    X_pool, X_t = d["X"][d["pool"]], d["X"][d["target"]]
    errs = []
    for k in d["new"]:
        asked, y = sel.simulate(_answers(d, k), n_max=n)
        assert len(asked) == n and len(set(asked.tolist())) == n
        p, _ = model.predict_posterior(X_t, model.posterior(X_pool[asked], y[None, :]))
        errs.append(np.mean(np.abs(p[0] - d["P"][k, d["target"]])))
    return np.asarray(errs)


def test_adaptive_recovers_abilities_faster_than_random(sim):
    model, d = sim
    X_pool, X_t = d["X"][d["pool"]], d["X"][d["target"]]
    n = 8
    err = {c: _errors(model, AdaptiveSelector(criterion=c, seed=0).fit(model, X_pool, X_t), d, n)
           for c in ("random", "d_optimal", "mixed", "target")}
    # the same 65 simulated LLMs: paired comparison of the probability error on the target prompts
    assert err["d_optimal"].mean() < 0.85 * err["random"].mean(), {c: e.mean() for c, e in err.items()}
    assert err["mixed"].mean() < 0.85 * err["random"].mean(), {c: e.mean() for c, e in err.items()}
    assert err["target"].mean() < 0.85 * err["random"].mean(), {c: e.mean() for c, e in err.items()}
    assert (err["d_optimal"] < err["random"]).mean() > 0.6


def test_accuracy_band_covers_the_realised_accuracy(sim):
    model, d = sim
    sel = AdaptiveSelector(criterion="mixed", seed=0).fit(model, d["X"][d["pool"]], d["X"][d["target"]])
    inside, widths = [], []
    for k in d["new"]:
        asked, y = sel.simulate(_answers(d, k), n_max=15)
        est = sel.estimate(sel.posterior(asked, y), level=0.9)
        true_expected = d["P"][k, d["target"]].mean()  # the band is for the expected accuracy
        inside.append(est["low"] <= true_expected <= est["high"])
        widths.append(est["width"])
    assert 0.75 <= np.mean(inside) <= 1.0, np.mean(inside)
    assert np.mean(widths) < 0.5


def test_selection_is_a_function_of_seed_and_history(sim):
    """A resumed run replays its answers and gets the same next prompts; another seed differs."""
    model, d = sim
    X_pool = d["X"][d["pool"]]
    answer = _answers(d, d["new"][3])
    s1 = AdaptiveSelector(criterion="mixed", explore=0.25, seed=7).fit(model, X_pool)
    asked, y = s1.simulate(answer, n_max=12)
    s2 = AdaptiveSelector(criterion="mixed", explore=0.25, seed=7).fit(model, X_pool)
    assert s2.next(asked[:6], y[:6], n=1)[0] == asked[6]  # resume after 6 answers continues the sequence
    asked2, _ = s2.simulate(answer, n_max=12)
    np.testing.assert_array_equal(asked, asked2)
    other, _ = AdaptiveSelector(criterion="mixed", explore=0.25, seed=8).fit(model, X_pool).simulate(answer, n_max=12)
    assert not np.array_equal(asked, other)  # exploration picks follow the seed


def test_exploration_takes_the_seeded_random_order(sim):
    sel, asked, _ = _simulate(sim, 0, 10, criterion="d_optimal", explore=0.5, seed=3)
    explore_steps = [s for s in range(10) if sel._is_explore(s)]
    assert len(explore_steps) == 5
    # the exploration picks are the first prompts of the seeded order not asked before them
    got = [asked[s] for s in explore_steps]
    expected, taken = [], set()
    for s in range(10):
        if s in explore_steps:
            j = next(int(i) for i in sel.order_ if int(i) not in taken)
            expected.append(j)
        taken.add(int(asked[s]))
    assert got == expected


def test_batches_are_distinct_and_skip_unanswerable(sim):
    model, d = sim
    X_pool = d["X"][d["pool"]]
    sel = AdaptiveSelector(criterion="d_optimal", batch_size=4, seed=0).fit(model, X_pool)
    batch = sel.next([], [])
    assert len(batch) == 4 and len(set(batch.tolist())) == 4
    # a batch spreads its picks: not four copies of the most informative region
    single = sel.next([], [], n=1)
    assert batch[0] == single[0]
    answer = _answers(d, d["new"][1])
    asked, y = sel.simulate(lambda j: np.nan if j % 3 == 0 else answer(j), n_max=10)
    assert len(asked) == 10 and not (asked % 3 == 0).any() and np.isfinite(y).all()


def test_stopping_rule(sim):
    model, d = sim
    sel = AdaptiveSelector(budget=30, min_questions=5, stop_width=0.9, stop_delta=1.0, stop_patience=2).fit(
        model, d["X"][d["pool"]])
    hist = [{"accuracy": 0.5, "width": 0.5}] * 3
    assert sel.should_stop(4, hist) == (False, "")  # below min_questions
    stop, why = sel.should_stop(6, hist)
    assert stop and "stable" in why
    assert not sel.should_stop(6, [{"accuracy": 0.5, "width": 0.95}] * 3)[0]
    assert sel.should_stop(30, [])[0]
    strict = AdaptiveSelector(budget=30, stop_width=None).fit(model, d["X"][d["pool"]])
    assert not strict.should_stop(29, hist)[0]


def test_bad_configuration_and_input(sim):
    model, d = sim
    X_pool = d["X"][d["pool"]]
    with pytest.raises(ConfigError, match="criterion"):
        AdaptiveSelector(criterion="entropy").fit(model, X_pool)
    with pytest.raises(ConfigError, match="explore"):
        AdaptiveSelector(explore=1.0).fit(model, X_pool)
    with pytest.raises(ConfigError, match="assessor=latent"):
        AdaptiveSelector().fit(object(), X_pool)
    with pytest.raises(DataError, match="empty"):
        AdaptiveSelector().fit(model, X_pool[:0])
    with pytest.raises(NotFittedError):
        AdaptiveSelector().next([], [])
    sel = AdaptiveSelector().fit(model, X_pool)
    with pytest.raises(DataError, match="answers"):
        sel.posterior([1, 2], [1.0])


def test_predict_config_builds_the_selector(compose):
    from hydra.utils import instantiate

    cfg = compose(["mode=onboard", "adaptive.budget=7", "adaptive.criterion=d_optimal", "seed=3"], config_name="predict")
    sel = instantiate(cfg.adaptive)
    assert isinstance(sel, AdaptiveSelector) and (sel.budget, sel.criterion, sel.seed) == (7, "d_optimal", 3)
    assert cfg.onboard.strategy == "auto"


def test_stratified_picks_cover_the_strata_before_repeating_one(sim):
    model, d = sim
    sel, asked, _ = _simulate(sim, 2, 12, criterion="d_optimal", strata=6, seed=0)
    strata = sel.strata_[asked]
    assert sorted(strata[:6]) == list(range(6)) and sorted(strata[6:]) == list(range(6))
    greedy = AdaptiveSelector(criterion="d_optimal", strata=0, seed=0).fit(model, d["X"][d["pool"]])
    assert (greedy.strata_ == 0).all()
