"""EB with the latent posterior as its prior model, checked by simulation from the latent model."""
import numpy as np
import pytest

from assessors.errors import ConfigError, DataError
from assessors.estimation.benchmark.latent_proxy import LatentProxy
from assessors.estimation.subgroup.base import ItemAnswers
from assessors.estimation.subgroup.direct import DirectEstimator
from assessors.estimation.subgroup.empirical_bayes import EmpiricalBayes
from assessors.estimation.subgroup.latent_prior import LatentPrior
from assessors.estimation.subgroup.sampling import draw_sample


def latent_world(n_llms=30, n_groups=16, per_group=60, dims=2, seed=0):
    """Answers drawn from the latent model: abilities ~ N(0, I), per-item discriminations, and
    difficulties around a per-subgroup level, so subgroups differ and LLMs differ across them."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=(n_llms, dims))
    codes = np.repeat(np.arange(n_groups), per_group)
    A = np.abs(rng.normal(0.8, 0.3, size=(n_groups, dims)))[codes] + rng.normal(0, 0.2, size=(len(codes), dims))
    b = rng.normal(0, 1.0, n_groups)[codes] + rng.normal(0, 0.7, len(codes))
    p = 1 / (1 + np.exp(-(theta @ A.T - b)))
    success = (rng.random(p.shape) < p).astype(float)
    return success, codes, rng


def sample_counts(success, codes, n_per_group, rng):
    """One harness-style draw: ``n_per_group`` items per subgroup, the same items for every LLM."""
    G = codes.max() + 1
    idx = draw_sample(codes, np.full(G, n_per_group), rng)
    sample = np.full(success.shape, np.nan)
    cols = np.concatenate(idx)
    sample[:, cols] = success[:, cols]
    k = np.stack([success[:, i].sum(1) for i in idx], axis=1)
    return k, np.full(k.shape, float(n_per_group)), sample


def fast_prior(**kw):
    return LatentPrior(proxy=LatentProxy(dims=2, max_iter=60), **kw)


def test_prior_never_sees_the_labels_it_corrects():
    success, codes, rng = latent_world(n_llms=12, n_groups=8, per_group=30)
    k, n, sample = sample_counts(success, codes, 8, rng)
    prior = fast_prior(llm_folds=3).fit(k, n, answers=ItemAnswers(sample, codes, success))
    g = 0
    flipped = sample.copy()
    cols = np.flatnonzero((codes == g) & np.isfinite(sample[0]))
    flipped[0, cols] = 1 - flipped[0, cols]  # LLM 0's own answers on subgroup 0
    k2 = k.copy()
    k2[0, g] = flipped[0, cols].sum()
    full2 = success.copy()
    full2[0] = 1 - full2[0]  # and its whole row of full answers: neither may move its prior on subgroup 0
    again = fast_prior(llm_folds=3).fit(k2, n, answers=ItemAnswers(flipped, codes, full2))
    assert again.estimate_[0, g] == pytest.approx(prior.estimate_[0, g], abs=1e-9)
    other = np.flatnonzero(prior.fold_ != prior.fold_[g])
    assert not np.allclose(again.estimate_[0, other], prior.estimate_[0, other])  # the other fold does see it


@pytest.mark.parametrize("scope, kurtosis", [("llm", "unit"), ("llm", "fold"), ("auto", "fold"),
                                             pytest.param("group", "unit", marks=pytest.mark.slow)])
def test_eb_with_latent_prior_is_unbiased_and_covers_in_simulation(scope, kurtosis):
    # Truth = each cell's full-data accuracy, as in the harness; 20 draws of 10 items per subgroup.
    success, codes, rng = latent_world()
    G = codes.max() + 1
    truth = np.stack([success[:, codes == g].mean(1) for g in range(G)], 1)
    errs, covered, w_eb, w_dt, mse_dt, mse_prior = [], [], [], [], [], []
    for rep in range(20):
        k, n, sample = sample_counts(success, codes, 10, rng)
        eb = EmpiricalBayes(regressor=fast_prior(random_state=rep), scope=scope, kurtosis=kurtosis,
                            variance="fixed_point" if kurtosis == "fold" else "add_one").fit(  # auto, fold: the preset's
            k, n, answers=ItemAnswers(sample, codes, success))
        dt = DirectEstimator().fit(k, n)
        errs.append((eb.estimate_ - truth).mean())
        covered.append((eb.lower_ <= truth) & (truth <= eb.upper_))
        w_eb.append(np.mean(eb.upper_ - eb.lower_))
        w_dt.append(np.mean(dt.upper_ - dt.lower_))
        mse_dt.append(np.mean((dt.estimate_ - truth) ** 2))
        mse_prior.append(np.mean((eb.estimate_ - truth) ** 2))
    errs = np.array(errs)
    se = errs.std(ddof=1) / np.sqrt(len(errs))
    assert abs(errs.mean()) <= 3 * se, (errs.mean(), se)
    coverage = np.mean(covered)
    assert coverage >= 0.93, coverage  # nominal 0.95 over 20 x 480 cells (llm scope: 0.983 unit, 0.954 fold)
    assert np.mean(mse_prior) < 0.8 * np.mean(mse_dt)
    assert np.mean(w_eb) < np.mean(w_dt)


def test_sample_only_sources_and_evidence_labels():
    success, codes, rng = latent_world(n_llms=12, n_groups=8, per_group=30)
    k, n, sample = sample_counts(success, codes, 8, rng)
    sample[3] = np.where(np.isfinite(sample[3]), 1.0, np.nan)  # LLM 3 answers everything correctly
    k[3] = n[3]
    prior = fast_prior().fit(k, n, answers=ItemAnswers(sample, codes))  # items fitted on others' samples only
    assert np.isfinite(prior.estimate_).all()
    assert set(prior.evidence_[3]) == {"one_class"} and "ok" in prior.evidence_[0]
    eb = EmpiricalBayes(regressor=fast_prior()).fit(k, n, answers=ItemAnswers(sample, codes))
    assert np.all(eb.lower_ <= eb.estimate_) and np.all(eb.estimate_ <= eb.upper_)


def test_bad_input_is_one_clear_error():
    success, codes, rng = latent_world(n_llms=6, n_groups=4, per_group=20)
    k, n, sample = sample_counts(success, codes, 5, rng)
    with pytest.raises(ConfigError, match="item-level answers"):
        fast_prior().fit(k, n)
    with pytest.raises(DataError, match="does not match successes/trials"):
        fast_prior().fit(k + (k < n), n, answers=ItemAnswers(sample, codes))
    empty = sample.copy()
    empty[2] = np.nan  # a target with no answers at all
    k0, n0 = k.copy(), n.copy()
    k0[2], n0[2] = 0, 0
    with pytest.raises(DataError, match="no graded item in subgroup"):
        EmpiricalBayes(regressor=fast_prior()).fit(k0, n0, answers=ItemAnswers(empty, codes))
    unseen = success.copy()
    unseen[:, codes == 1] = np.nan  # nobody answered subgroup 1's items: the model cannot describe them
    with pytest.raises(DataError, match="subgroup 1 has no item answered"):
        fast_prior().fit(k, n, answers=ItemAnswers(sample, codes, unseen))
    with pytest.raises(DataError, match="at least 3 LLMs"):
        fast_prior().fit(k[:2], n[:2], answers=ItemAnswers(sample[:2], codes))
    with pytest.raises(DataError, match="0, 1 or missing"):
        fast_prior().fit(k, n, answers=ItemAnswers(sample * 2, codes))
