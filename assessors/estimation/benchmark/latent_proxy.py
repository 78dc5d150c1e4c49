"""The latent model's posterior as a per-item proxy: a target's abilities from its visible core answers.

The model is the latent assessor's (:mod:`assessors.core.latent`): ``P(success) = sigmoid(theta . a - b)``
with a Gaussian prior over abilities fitted on the training LLMs and a Laplace posterior for a new
LLM from any graded items (:func:`assessors.core.posterior.laplace_posterior`). Score matrices carry
no prompt text, so the item parameters ``a`` (D,) and ``b`` are fitted per item on the source LLMs by
the shared 2PL fit (:class:`assessors.selection.irt.MultidimIRT`, joint MAP) instead of coming from an
item network. They depend on the source split only and are fitted once per split (cached across
trials, core sizes and methods): the targets' answers never enter them.

At estimate time the proxy sees the target's core answers with NaN for hidden cells (AIPW's
cross-fitting hides one fold at a time), so the posterior behind a core item's prediction never
contains that item's own answer.
"""
from __future__ import annotations

import numpy as np

from assessors.core.posterior import GaussianPrior, logit_moments, probit_mean, probit_predictive
from assessors.estimation.benchmark.base import cached
from assessors.estimation.benchmark.proxy import ItemProxy
from assessors.irt_math import check_answers, laplace_posterior, sigmoid
from assessors.selection.irt import MultidimIRT


class LatentProxy(ItemProxy):
    """Posterior-predictive P(success) on every item from the target's visible core answers.

    Parameters
    ----------
    dims : int
        Ability dimension D of the latent model.
    prior_discrimination : float
        Prior standard deviation of the discriminations in the item fit (an L2 penalty).
    max_iter : int
        L-BFGS iterations of the item fit.
    seed : int
        Seed of the item fit. Not the trial's seed: the fit depends on the source split only, so one
        fit serves every trial and core size of that split.

    Attributes
    ----------
    discrimination_ : ndarray of shape (n_items, dims)
    difficulty_ : ndarray of shape (n_items,)
    source_ability_ : ndarray of shape (n_source_llms, dims)
    prior_ : GaussianPrior
        Ability prior fitted on the source LLMs' abilities (Ledoit-Wolf covariance).
    """

    def __sklearn_tags__(self):  # the item fit leaves missing cells out of the likelihood
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        return tags

    def __init__(self, dims: int = 4, prior_discrimination: float = 0.5, max_iter: int = 100, seed: int = 0):
        self.dims = dims
        self.prior_discrimination = prior_discrimination
        self.max_iter = max_iter
        self.seed = seed

    def fit(self, source_success, features, core_index):
        super().fit(source_success, features, core_index)
        S = np.asarray(source_success, dtype=np.float64)
        key = (int(self.dims), float(self.prior_discrimination), int(self.max_iter), int(self.seed))
        irt = cached("latent_proxy_irt", S, key, lambda: MultidimIRT(
            dims=int(self.dims), prior_discrimination=float(self.prior_discrimination),
            max_iter=int(self.max_iter), seed=int(self.seed)).fit(S))
        self.discrimination_, self.difficulty_ = irt.discrimination_, irt.difficulty_
        self.source_ability_ = irt.ability_
        # a function of the item fit alone: one per source split, in this process
        self.prior_ = cached("latent_proxy_prior", S, key, lambda: GaussianPrior.fit(irt.ability_), disk=False)
        return self

    def population_moments(self) -> tuple[np.ndarray, np.ndarray]:
        """Each item's success probability and Bernoulli variance ``p (1 - p)``, averaged over the
        source LLMs' abilities: what the model expects of a target like the sources, before any of
        its answers. Two arrays of shape (n_items,)."""
        p = sigmoid(self.source_ability_ @ self.discrimination_.T - self.difficulty_)
        return p.mean(0), (p * (1 - p)).mean(0)

    def posterior(self, core_success: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Laplace posterior of each target's abilities from its core answers.

        Parameters
        ----------
        core_success : ndarray of shape (k, n_core)
            0/1 answers on ``core_index_``, NaN where hidden or not evaluated.

        Returns
        -------
        theta : ndarray of shape (k, dims)
        cov : ndarray of shape (k, dims, dims)
        """
        Y = check_answers(core_success, "core answers")
        c = self.core_index_
        return laplace_posterior(self.discrimination_[c], self.difficulty_[c], Y, self.prior_.mean,
                                 self.prior_.precision)

    def predictive(self, core_success: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Posterior-predictive mean and spread, each of shape (k, n_items)."""
        theta, cov = self.posterior(core_success)
        return probit_predictive(*logit_moments(theta, cov, self.discrimination_, self.difficulty_))

    def predict(self, core_success):
        theta, cov = self.posterior(core_success)
        return probit_mean(*logit_moments(theta, cov, self.discrimination_, self.difficulty_))
