"""``scope="auto"``: EB picks its prior-variance model from the observed cells by penalised likelihood.

Checked by simulation around a known prior mean in two worlds: one where the prior spread differs
by LLM only (``scope="llm"`` is the true model) and ``test_group_scope.py``'s binomial world,
``A = a_g m(1-m)`` with three in four prior means near 0 or 1 (``factor_binomial`` holds it, one
``A`` per LLM does not). The choice must pick the true model in most draws and the intervals must
cover at the nominal rate either way."""
import numpy as np
import pytest

from assessors.estimation.subgroup.empirical_bayes import EmpiricalBayes
from assessors.estimation.subgroup.scope_choice import gaussian_loglik, n_variance_params

from ._sim import KnownPrior
from .test_group_scope import binomial_world


def llm_world(n_llms=40, n_groups=24, n_per_group=30, seed=0):
    """Truth = prior mean + ``sd_l`` times a clipped Laplace shock, ``sd_l`` from 0.01 to 0.12 by
    LLM and the same in every subgroup (12 subgroups per fold, about BBH+MuSR's 13-14)."""
    rng = np.random.default_rng(seed)
    sd = np.geomspace(0.01, 0.12, n_llms)[rng.permutation(n_llms)]
    mean = rng.uniform(0.3, 0.7, size=(n_llms, n_groups))
    shock = np.clip(rng.laplace(0, np.sqrt(0.5), size=mean.shape), -2.5, 2.5)  # |sd shock| <= 0.3
    theta = np.clip(mean + sd[:, None] * shock, 0.0, 1.0)
    return mean, theta, np.full(mean.shape, float(n_per_group)), rng


def _auto_runs(world, reps):
    mean, theta, trials, rng = world[0], world[1], world[-2], world[-1]
    chosen, covered = [], []
    for rep in range(reps):
        k = rng.binomial(trials.astype(int), theta).astype(float)
        eb = EmpiricalBayes(regressor=KnownPrior(mean, random_state=rep), scope="auto", variance="fixed_point",
                            kurtosis="fold").fit(k, trials)
        chosen.append(eb.scope_)
        covered.append((eb.lower_ <= theta) & (theta <= eb.upper_))
    return np.array(chosen), np.stack(covered)


def test_auto_picks_one_variance_per_llm_where_llms_differ():
    chosen, covered = _auto_runs(llm_world(), reps=20)
    assert np.mean(chosen == "llm") >= 0.8, chosen
    assert covered.mean() >= 0.93, covered.mean()
    assert covered.mean((0, 1)).min() >= 0.88, covered.mean((0, 1))


def test_auto_picks_the_factor_model_where_a_follows_subgroup_and_binomial_scale():
    mean, theta, _, trials, rng = binomial_world()
    chosen, covered = _auto_runs((mean, theta, trials, rng), reps=10)
    assert np.mean(chosen == "factor_binomial") >= 0.8, chosen
    assert covered.mean() >= 0.93, covered.mean()
    assert covered.mean((0, 1)).min() >= 0.90, covered.mean((0, 1))


def test_parameter_counts_and_likelihood():
    fold = np.array([0, 0, 0, 1, 1, 1, 1])
    assert n_variance_params("llm", 5, fold) == 10
    assert n_variance_params("pooled", 5, fold) == 2
    assert n_variance_params("group_binomial", 5, fold) == 7
    eps, var = np.array([[0.0, 1.0]]), np.array([[1.0, 4.0]])
    by_hand = -0.5 * (np.log(2 * np.pi) + np.log(8 * np.pi) + 0.25)
    assert gaussian_loglik(eps, var) == pytest.approx(by_hand)


def test_a_fixed_scope_reports_itself():
    mean, theta, trials, rng = llm_world(n_llms=6, n_groups=8)
    k = rng.binomial(trials.astype(int), theta).astype(float)
    eb = EmpiricalBayes(regressor=KnownPrior(mean), scope="group").fit(k, trials)
    assert eb.scope_ == "group" and list(eb.scope_scores_) == ["group"]
