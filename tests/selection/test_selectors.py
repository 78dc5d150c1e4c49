"""Every reference selector: contract, determinism, bad sizes, and what each is meant to find."""
from __future__ import annotations

import numpy as np
import pytest
from hydra.utils import instantiate

from assessors.errors import ConfigError, DataError
from assessors.selection.base import RandomSelector
from assessors.selection.factor_analysis import FactorAnalysisSelector, allocate_by_loading, factor_quotas, principal_factors
from assessors.selection.feature_spaces import EmbeddingSpace, IRTSpace, SuccessSpace
from assessors.selection.kmeans import KMeansSelector, nearest_unique

SELECTORS = ["random", "random_best_of_n", "kmeans_embeddings", "kmeans_successes", "kmeans_irt",
             "factor_analysis_embeddings", "factor_analysis_successes", "factor_analysis_irt"]


def _build(compose, name, size, seed=0, tmp=None):
    over = [f"selector={name}", "features=success_pattern", f"selector.size={size}", f"seed={seed}"]
    if name == "random_best_of_n":
        over += ["selector.n_draws=3"]
    if name.endswith("_irt"):
        over += ["selector.space.max_iter=30", "selector.space.dims=2"]
    return instantiate(compose(over).selector)


@pytest.mark.parametrize("name", SELECTORS)
def test_selector_config_contract_and_determinism(compose, synth, name):
    success, ids, X = synth
    a = _build(compose, name, 12).fit(success, ids, X)
    b = _build(compose, name, 12).fit(success, ids, X)
    assert len(a.reference_ids_) == 12 and len(set(a.reference_ids_)) == 12
    assert set(a.reference_ids_) <= set(ids)
    assert a.reference_ids_ == b.reference_ids_, "same seed must give the same reference set"
    assert [ids[i] for i in a.reference_index_] == a.reference_ids_


@pytest.mark.parametrize("name", SELECTORS)
def test_every_selector_takes_the_validation_results(compose, synth, name):
    """One ``fit`` for every selector: callers pass the validation LLMs' results to all of them;
    those that judge candidate sets on them (random best-of-N) use them, the others ignore them."""
    success, ids, X = synth
    val = (X[:50], success[:5, :50], success[:5])
    with_val = _build(compose, name, 12).fit(success[5:], ids, X, validation=val)
    without = _build(compose, name, 12).fit(success[5:], ids, X)
    assert len(set(with_val.reference_ids_)) == 12 and set(with_val.reference_ids_) <= set(ids)
    if name != "random_best_of_n":
        assert with_val.reference_ids_ == without.reference_ids_


@pytest.mark.parametrize("name", SELECTORS)
def test_selector_size_larger_than_pool_is_a_clear_error(compose, synth, name):
    success, ids, X = synth
    with pytest.raises(ConfigError, match="larger than the candidate pool"):
        _build(compose, name, len(ids) + 1).fit(success, ids, X)


@pytest.mark.parametrize("name", ["random", "kmeans_embeddings", "random_best_of_n"])
def test_seed_changes_randomised_selectors(compose, synth, name):
    success, ids, X = synth
    a = _build(compose, name, 12, seed=0).fit(success, ids, X)
    b = _build(compose, name, 12, seed=1).fit(success, ids, X)
    assert a.reference_ids_ != b.reference_ids_


def test_kmeans_picks_one_instance_per_well_separated_cluster():
    rng = np.random.default_rng(1)
    centres = rng.normal(0, 50, size=(7, 3))
    label = np.repeat(np.arange(7), 20)
    Z = centres[label] + rng.normal(0, 0.5, size=(140, 3))
    sel = KMeansSelector(size=7, seed=0, space=EmbeddingSpace()).fit(np.zeros((2, 140)), [str(i) for i in range(140)], Z)
    assert sorted(label[sel.reference_index_]) == list(range(7))
    # and each pick is its cluster's nearest point to the cluster mean
    for i in sel.reference_index_:
        members = np.flatnonzero(label == label[i])
        d = ((Z[members] - Z[members].mean(0)) ** 2).sum(1)
        assert members[np.argmin(d)] == i


def test_nearest_unique_never_repeats_a_point():
    Z = np.array([[0.0], [0.1], [10.0]])
    out = nearest_unique(Z, np.array([[0.0], [0.05], [0.02]]))  # all three centres are nearest point 0
    assert sorted(out) == [0, 1, 2]


def test_kmeans_too_few_distinct_points_is_a_clear_error():
    Z = np.repeat(np.eye(3), 10, axis=0)
    with pytest.raises(DataError, match="only 3 distinct candidates"):
        KMeansSelector(size=5, space=EmbeddingSpace()).fit(np.zeros((2, 30)), [str(i) for i in range(30)], Z)


def test_principal_factors_match_factor_analyzer():
    import factor_analyzer.factor_analyzer as fam
    from sklearn.utils import check_array

    # factor_analyzer 0.5.1 passes sklearn<1.6's force_all_finite; adapt it for this comparison only
    orig = fam.check_array
    fam.check_array = lambda X, force_all_finite=True, **kw: check_array(X, ensure_all_finite=force_all_finite, **kw)
    try:
        rng = np.random.default_rng(3)
        data = rng.normal(size=(40, 3)) @ rng.normal(size=(3, 12)) + rng.normal(size=(40, 12))
        ref = fam.FactorAnalyzer(n_factors=3, rotation=None, method="principal", svd_method="lapack").fit(data)
        ours, eig = principal_factors(data, 3)
        np.testing.assert_allclose(np.abs(ours), np.abs(ref.loadings_[:, :3]), atol=1e-6)  # lapack path keeps all factors
        np.testing.assert_allclose(eig[:12], ref.get_eigenvalues()[0][:12], atol=1e-8)
    finally:
        fam.check_array = orig


def test_factor_analysis_recovers_factor_count_and_spreads_picks():
    # 3 latent factors over 60 observations; each candidate loads on exactly one of them
    rng = np.random.default_rng(2)
    # 300 observations: Kaiser's rule over-counts factors when noise eigenvalues exceed 1,
    # which happens once candidates outnumber observations (Marchenko-Pastur); not so here
    scores = rng.normal(size=(300, 3))
    group = np.repeat(np.arange(3), [40, 30, 20])
    obs = scores[:, group] * 0.9 + rng.normal(0, 0.45, size=(300, 90))
    sel = FactorAnalysisSelector(size=10, space=EmbeddingSpace()).fit(np.zeros((2, 90)), [str(i) for i in range(90)], obs.T)
    assert sel.n_factors_ == 3
    counts = np.bincount(group[sel.reference_index_], minlength=3)
    assert sorted(counts.tolist()) == [3, 3, 4], counts  # 10 // 3 each, remainder 1 to the strongest factor
    assert counts[0] == 4  # the 40-candidate factor explains most variance


def test_factor_quotas_follow_the_footnote():
    assert factor_quotas(np.array([1.0, 3.0, 2.0]), 10).tolist() == [3, 4, 3]
    assert factor_quotas(np.array([1.0, 3.0, 2.0]), 11).tolist() == [3, 4, 4]
    assert factor_quotas(np.array([1.0, 3.0, 2.0, 0.5]), 2).tolist() == [0, 1, 1, 0]
    picks = allocate_by_loading(np.array([[0.9, 0.8], [0.8, 0.1], [0.1, 0.7], [0.0, 0.6]]), 3)
    assert picks.tolist() == [0, 1, 2] or picks.tolist() == [0, 2, 3]
    assert len(set(picks.tolist())) == 3


def test_factor_analysis_rejects_mostly_constant_candidates():
    S = np.zeros((10, 20), dtype=np.float32)
    S[:5, :4] = 1
    with pytest.raises(DataError, match="only 4 of 20 candidates vary"):
        FactorAnalysisSelector(size=6, space=SuccessSpace()).fit(S, [str(i) for i in range(20)])


def test_feature_spaces_shapes_and_missing_cells(synth, tmp_path):
    success, ids, X = synth
    Zs = SuccessSpace().transform(success, None)
    assert Zs.shape == (200, 30) and np.isfinite(Zs).all()
    with pytest.raises(ConfigError):
        EmbeddingSpace().transform(success, None)
    space = IRTSpace(dims=2, max_iter=50, cache_dir=str(tmp_path))
    Zi = space.transform(success, None)
    assert Zi.shape == (200, 3) and np.isfinite(Zi).all()
    assert len(list((tmp_path / "irt_items").glob("*.npz"))) == 1
    np.testing.assert_array_equal(space.transform(success, None), Zi)  # memo hit gives the same parameters


def test_random_best_of_n_keeps_the_best_draw_and_uses_validation(compose, synth):
    success, ids, X = synth
    sel = _build(compose, "random_best_of_n", 10)
    sel.set_params(n_draws=4)
    rng = np.random.default_rng(5)
    val = (X[:50], success[:5, :50], success[:5])
    sel.fit(success[5:], ids, X, validation=val)
    scores = sel.draw_scores_
    assert len(scores) == 4 and sel.best_draw_ == scores["win_rate"].idxmax()
    # the chosen set is the best draw's: re-drawing with the same seed reproduces it
    again = _build(compose, "random_best_of_n", 10).set_params(n_draws=4).fit(success[5:], ids, X, validation=val)
    assert again.reference_ids_ == sel.reference_ids_
    assert rng is not None


def test_random_selector_is_uniform_over_many_seeds(synth):
    success, ids, _ = synth
    hits = np.zeros(len(ids))
    for s in range(300):
        hits[RandomSelector(size=20, seed=s).fit(success, ids).reference_index_] += 1
    # each id is chosen with probability 0.1: 30 expected, sd ~5.2
    assert abs(hits.mean() - 30) < 1e-9 and hits.min() > 10 and hits.max() < 52
