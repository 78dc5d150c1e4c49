"""Data drawn from the EB model: logit(theta) = f(x_g) + LLM intercept + noise; k ~ Binomial(n, theta)."""
import numpy as np

from assessors.estimation.subgroup.base import SubgroupEstimator
from assessors.estimation.subgroup.regression import subgroup_folds


def simulate(n_llms=8, n_groups=40, n_per_group=20, noise_sd=0.5, d=4, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n_groups, d))
    intercept = rng.normal(0, 0.7, size=n_llms)
    logit = x[:, 0][None, :] + 0.5 * np.sin(x[:, 1])[None, :] + intercept[:, None]
    theta = 1 / (1 + np.exp(-(logit + rng.normal(0, noise_sd, size=logit.shape))))
    trials = np.broadcast_to(np.asarray(n_per_group), (n_llms, n_groups)).astype(float)
    return x, theta, trials, rng


def draw(theta, trials, rng):
    return rng.binomial(trials.astype(int), theta).astype(float)


class KnownPrior(SubgroupEstimator):
    """The prior mean the cells were drawn around (the simulation's truth), with SR's folds."""

    def __init__(self, mean=None, n_folds=2, random_state=0):
        self.mean = mean
        self.n_folds = n_folds
        self.random_state = random_state

    def _fit(self, successes, trials, group_features, assessor_mean, answers=None):
        self.fold_ = subgroup_folds(successes.shape[1], self.n_folds, self.random_state)
        nan = np.full(successes.shape, np.nan)
        return np.asarray(self.mean, dtype=float), nan, nan
