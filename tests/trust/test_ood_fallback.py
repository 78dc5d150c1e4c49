"""The fallback for unseen tasks, chosen on held-out groups of training prompts: by simulation, the
population ranking when every LLM finds the same prompts hard, not it when each LLM's successes follow
its own direction in feature space; the stated default when nothing can be held out."""
from __future__ import annotations

import numpy as np
import pytest

from assessors.core.latent import LatentAssessor
from assessors.errors import ConfigError
from assessors.irt_math import sigmoid
from assessors.trust.ood_fallback import OODFallbackValidation
from assessors.trust.population import PopulationDifficulty


def _latent():
    return LatentAssessor(dims=1, hidden_sizes=[16], n_members=1, max_epochs=15, residual_dims=8, item_neighbours=0,
                          seed=0, num_threads=1)


def _world(shared: bool, seed: int = 0, n=720, d=6, n_train=30, n_val=8):
    """(X (n, d), groups (n,), S_train, S_val): 6 groups, each a shifted cloud of prompts."""
    rng = np.random.default_rng(seed)
    groups = np.repeat(np.arange(6), n // 6).astype(str)
    centres = rng.normal(0, 1.0, (6, d))
    X = (centres[groups.astype(int)] + rng.standard_normal((n, d))).astype(np.float32)
    m = n_train + n_val
    if shared:  # one difficulty for all, nonlinear in the features; LLMs differ in level only
        logit = rng.normal(0, 0.7, m)[:, None] + (2.0 * np.sin(2 * X[:, 0]) - 1.2 * np.abs(X[:, 1]))[None, :]
    else:  # each LLM its own direction: nothing is shared between LLMs
        logit = 1.5 * rng.standard_normal((m, d)) @ X.T
    S = (rng.random((m, n)) < sigmoid(logit)).astype(np.float64)
    return X, groups, S[:n_train], S[n_train:]


@pytest.mark.parametrize("shared", [True, False])
def test_the_choice_follows_what_transfers_to_held_out_groups(shared):
    X, groups, S_tr, S_val = _world(shared)
    v = OODFallbackValidation(n_folds=3, n_reference=100, progress=False).fit(_latent, PopulationDifficulty(), X,
                                                                               S_tr, S_val, groups)
    auc = v.mean_auc_
    if shared:  # the latent ranking (one ability dimension, few epochs) and the LLM's answers lag the trees
        assert v.choice_ == "population" and auc["population"] > max(auc["reference_only"], auc["releveled"]) + 0.1, auc
    else:  # the LLM's own answers (alone, or through the latent residual) transfer; the population is chance
        assert v.choice_ != "population" and auc["reference_only"] > max(auc["population"], 0.55) + 0.2, auc
    rec = v.record()
    assert rec["choice"] == v.choice_ and sorted(sum(rec["folds"], [])) == sorted(set(groups))
    assert rec["n_pairs"]["population"] == 3 * len(S_val)
    assert "held-out folds of 6 training-prompt groups" in rec["chosen_by"]


def test_one_group_or_no_validation_llm_keeps_the_stated_default():
    X, groups, S_tr, S_val = _world(True, n=120)
    one = OODFallbackValidation(progress=False).fit(_latent, PopulationDifficulty(), X, S_tr, S_val,
                                                    np.zeros(len(X), dtype=str))
    assert one.choice_ == "reference_only" and "1 group(s)" in one.record()["chosen_by"]
    none = OODFallbackValidation(progress=False).fit(_latent, PopulationDifficulty(), X, S_tr, S_val[:0], groups)
    assert none.choice_ == "reference_only" and "no validation LLMs" in none.chosen_by_


def test_unknown_candidates_and_a_missing_population_model_are_clear_errors():
    X, groups, S_tr, S_val = _world(True, n=120)
    with pytest.raises(ConfigError, match="unknown trust fallback"):
        OODFallbackValidation(candidates=["magic"]).fit(_latent, None, X, S_tr, S_val, groups)
    with pytest.raises(ConfigError, match="needs a model trained with a population model"):
        OODFallbackValidation().fit(_latent, None, X, S_tr, S_val, groups)


@pytest.mark.parametrize("band, values", [("auc_band", "aucs_"),
                                         pytest.param("accuracy_error_band", "errors_", marks=pytest.mark.slow)])
def test_the_recorded_bands_cover_new_llms_on_the_held_out_groups(band, values):
    """The band of each candidate (the central 90% of its per-pair AUCs, or of its accuracy errors: realised
    minus mean prediction) holds about 90% of the pairs of other validation LLMs drawn from the same
    population, on the same held-out groups."""
    X, groups, S_tr, S_val = _world(True, n_val=48)
    first = OODFallbackValidation(progress=False).fit(_latent, PopulationDifficulty(), X, S_tr, S_val[:24], groups)
    second = OODFallbackValidation(progress=False).fit(_latent, PopulationDifficulty(), X, S_tr, S_val[24:], groups)
    assert first.folds_ == second.folds_
    bands = first.record()[band]
    assert first.record()["level"] == 0.9 and set(bands) == {"releveled", "reference_only", "population"}
    inside = [lo <= a <= hi for c, (lo, hi) in bands.items() for a in getattr(second, values)[c] if np.isfinite(a)]
    assert len(inside) == 3 * 3 * 24
    assert 0.75 <= np.mean(inside) <= 1.0, np.mean(inside)
    for c, (lo, hi) in bands.items():
        centre = first.mean_auc_[c] if band == "auc_band" else np.mean(first.errors_[c])
        assert lo <= centre <= hi


def test_the_accuracy_error_is_realised_minus_predicted():
    """Validation LLMs that solve every prompt of one group, which the training LLMs do not: on the fold
    holding that group, they do better than any fallback fitted elsewhere predicts (a positive error)."""
    X, groups, S_tr, S_val = _world(True, n_val=12)
    S_val = np.where(groups[None, :] == "0", 1.0, S_val)
    v = OODFallbackValidation(progress=False).fit(_latent, PopulationDifficulty(), X, S_tr, S_val, groups)
    easy = next(f for f, names in enumerate(v.folds_) if "0" in names)
    for c in v.candidates:
        err = np.asarray(v.errors_[c]).reshape(len(v.folds_), len(S_val))
        others = np.delete(err, easy, axis=0)
        assert err[easy].mean() > 0.05 and err[easy].mean() > others.mean() + 0.05, (c, err.mean(1))


def test_the_refits_on_one_thread_record_what_the_callers_budget_records():
    """The refits run under a one-thread BLAS limit (their matrices are small); the record is the same."""
    from assessors.threads import current_budget, thread_limits

    X, groups, S_tr, S_val = _world(False, n=360)
    budgets = []

    def latent():
        budgets.append(current_budget())
        return _latent()

    with thread_limits(2):
        one = OODFallbackValidation(progress=False).fit(latent, PopulationDifficulty(), X, S_tr, S_val, groups)
        caller = OODFallbackValidation(threads=None, progress=False).fit(latent, PopulationDifficulty(), X, S_tr,
                                                                        S_val, groups)
    assert budgets == [1, 1, 1, 2, 2, 2]
    assert one.record() == caller.record()
