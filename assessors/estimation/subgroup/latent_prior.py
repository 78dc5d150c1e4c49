"""The latent model's posterior as the EB prior model: each LLM's subgroup accuracy predicted from its
answers on the *other* subgroups.

The model is the latent assessor's 2PL (:class:`~assessors.estimation.benchmark.latent_proxy.LatentProxy`:
``P(success) = sigmoid(theta . a - b)``, a Gaussian ability prior and a Laplace posterior from any
graded items). Two cross-fittings keep the prior independent of the labels EB corrects with it:

* over LLMs: item parameters for the LLMs of one fold are fitted on the other LLMs only (their full
  answers when :class:`~assessors.estimation.subgroup.base.ItemAnswers` carries them, else their
  sampled answers), so a target's own answers never shape the items;
* over subgroups: the prior mean of a cell in subgroup fold ``f`` is the posterior-predictive mean
  success over that subgroup's items given the target's sampled answers in the other folds only.

With full answers the items are fitted in two stages: the joint 2PL fit (the latent proxy's) on a
fixed random subset of ``items_per_group`` items per subgroup gives the source LLMs' abilities,
then every item's discrimination and difficulty are fitted given those abilities (one small
logistic MAP per item, the ability Newton step of :func:`assessors.irt_math.map_ability` with the
roles of LLMs and items swapped). Both stages depend on the source rows alone and are memoised
(the benchmark estimators' per-split cache), so repeated samples fit each LLM fold once. The
subset also keeps the joint fit where its optimiser converges: on 60 LLMs x 6,500 items it stops
after one step, its gradient tolerance being on the per-cell mean loss.
"""
from __future__ import annotations

import numpy as np
from sklearn.base import clone

from assessors.core.posterior import check_answers, evidence_labels, laplace_posterior, logit_moments, probit_predictive
from assessors.errors import ConfigError, DataError
from assessors.estimation.benchmark.base import cached
from assessors.estimation.benchmark.latent_proxy import LatentProxy
from assessors.irt_math import map_ability
from assessors.selection.irt import MultidimIRT
from assessors.estimation.subgroup.base import ItemAnswers, SubgroupEstimator
from assessors.estimation.subgroup.regression import subgroup_folds


def check_item_answers(answers: ItemAnswers | None, successes: np.ndarray, trials: np.ndarray):
    """Validate ``answers`` against the counts; returns ``(sample, codes, full)`` as arrays.

    The per-subgroup sums and counts of ``sample`` must equal ``successes`` and ``trials``, so the
    prior and the direct estimates describe the same sample.
    """
    if answers is None:
        raise ConfigError("the latent prior needs the item-level answers behind the counts: "
                          "pass answers=ItemAnswers(sample, codes[, full]) to fit")
    sample = check_answers(answers.sample, "sampled answers")
    codes = np.asarray(answers.codes)
    n_llms, n_groups = successes.shape
    if sample.shape[0] != n_llms or codes.shape != (sample.shape[1],):
        raise DataError(f"answers: sample {sample.shape} and codes {codes.shape} must be ({n_llms}, n_items) and (n_items,)")
    if codes.min() < 0 or codes.max() >= n_groups or not np.issubdtype(codes.dtype, np.integer):
        raise DataError(f"answers.codes must be integer subgroups in [0, {n_groups})")
    obs = np.isfinite(sample)
    k = np.stack([np.where(obs[:, codes == g], sample[:, codes == g], 0).sum(1) for g in range(n_groups)], 1)
    n = np.stack([obs[:, codes == g].sum(1) for g in range(n_groups)], 1)
    if not (np.array_equal(k, successes) and np.array_equal(n, trials)):
        raise DataError("answers.sample does not match successes/trials: pass the answers the counts were summed from")
    full = None if answers.full is None else check_answers(answers.full, "full answers")
    if full is not None and full.shape != sample.shape:
        raise DataError(f"answers.full has shape {full.shape}; expected {sample.shape}")
    return sample, codes, full


def _item_subset(codes: np.ndarray, per_group: int, rng) -> np.ndarray:
    """Sorted item positions: ``per_group`` random items of each subgroup (all of a smaller one)."""
    return np.sort(np.concatenate([rng.permutation(np.flatnonzero(codes == g))[:per_group] for g in np.unique(codes)]))


def _all_items(proxy: LatentProxy, source: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Discrimination (n_items, D) and difficulty (n_items,) of every column of ``source`` given the
    source abilities of the fitted ``proxy``: per item, the MAP of ``(a, -b)`` under the item
    priors, with the abilities (and a constant 1) as the known design."""
    irt_priors = np.r_[np.full(proxy.dims, float(proxy.prior_discrimination)), MultidimIRT().prior_difficulty]
    design = np.hstack([proxy.source_ability_, np.ones((len(source), 1))])
    phi = map_ability(design, np.zeros(len(source)), source.T, np.zeros(proxy.dims + 1), np.diag(irt_priors ** -2.0))
    return phi[:, :-1], -phi[:, -1]


class LatentPrior(SubgroupEstimator):
    """Cross-fitted posterior-predictive subgroup accuracy (a prior model for EB, without intervals).

    Parameters
    ----------
    proxy : LatentProxy, optional
        The latent model (default ``LatentProxy()``: 4 ability dimensions).
    n_folds : int
        Cross-fitting folds over subgroups (the EB folds).
    llm_folds : int
        Cross-fitting folds over LLMs for the item fits (capped at the number of LLMs).
    items_per_group : int
        With full answers, the items per subgroup of the joint fit (the rest are fitted given the
        abilities it finds).
    llm_fold_seed : int
        Seeds the LLM folds and the item subset. Not ``random_state``: harnesses reseed that every
        repeat, and these choices must stay fixed for the item fits to be reused.
    random_state : int or None
        Seeds the subgroup folds.

    Attributes
    ----------
    estimate_ : ndarray of shape (n_llms, n_groups)
        Posterior-predictive mean accuracy of each cell (clipped to [0, 1]).
    fold_ : ndarray of shape (n_groups,)
        Subgroup fold of each subgroup.
    llm_fold_ : ndarray of shape (n_llms,)
    evidence_ : ndarray of str, shape (n_llms, n_groups)
        What the answers behind each cell's prior support (``prior_only``, ``one_class`` or ``ok``,
        :data:`assessors.core.posterior.EVIDENCE`): ``prior_only`` means the cell's prior is the
        population's, not the LLM's.
    """

    def __init__(self, proxy: LatentProxy | None = None, n_folds: int = 2, llm_folds: int = 5,
                 items_per_group: int = 100, llm_fold_seed: int = 0, random_state: int | None = 0):
        self.proxy = proxy
        self.n_folds = n_folds
        self.llm_folds = llm_folds
        self.items_per_group = items_per_group
        self.llm_fold_seed = llm_fold_seed
        self.random_state = random_state

    def _items(self, source: np.ndarray, codes: np.ndarray, full: bool):
        """``(proxy, A, b, items)``: the fitted proxy and the parameters of the ``items`` (positions)
        some source LLM answered, the only ones the model can describe."""
        items = np.flatnonzero(np.isfinite(source).any(0))
        missing = np.setdiff1d(np.unique(codes), codes[items])
        if missing.size:
            raise DataError(f"subgroup {int(missing[0])} has no item answered by the source LLMs, so the latent "
                            "model cannot describe it: pass answers.full or drop the subgroup")
        source = source[:, items]
        proxy = clone(self.proxy if self.proxy is not None else LatentProxy())
        if not full:  # sampled answers: one joint fit on the sampled items
            proxy.fit(source, None, np.arange(len(items)))
            return proxy, proxy.discrimination_, proxy.difficulty_, items
        sub = _item_subset(codes[items], int(self.items_per_group), np.random.default_rng(self.llm_fold_seed))
        proxy.fit(source[:, sub], None, np.arange(len(sub)))
        key = (proxy.dims, proxy.prior_discrimination, proxy.max_iter, proxy.seed, int(self.items_per_group),
               int(self.llm_fold_seed))
        A, b = cached("subgroup_latent_items", source, key, lambda: _all_items(proxy, source))
        return proxy, A, b, items

    def _fit(self, successes, trials, group_features, assessor_mean, answers=None):
        sample, codes, full = check_item_answers(answers, successes, trials)
        n_llms, n_groups = successes.shape
        if n_llms < 3:
            raise DataError(f"the latent prior fits items on the other LLMs: it needs at least 3 LLMs, got {n_llms}")
        self.fold_ = subgroup_folds(n_groups, self.n_folds, self.random_state)
        n_llm_folds = min(int(self.llm_folds), n_llms)
        if n_llm_folds < 2:
            raise ConfigError(f"llm_folds={self.llm_folds}: cross-fitting over LLMs needs at least 2 folds")
        self.llm_fold_ = np.random.default_rng(self.llm_fold_seed).permutation(np.arange(n_llms) % n_llm_folds)
        source_all = full if full is not None else sample
        pred = np.full(successes.shape, np.nan)
        evidence = np.empty(successes.shape, dtype=object)
        for j in range(n_llm_folds):
            tgt = self.llm_fold_ == j
            proxy, A, b, items = self._items(source_all[~tgt], codes, full is not None)
            item_codes = codes[items]
            Y = sample[tgt][:, items]
            for f in range(self.n_folds):
                visible = np.where((self.fold_[item_codes] == f)[None, :], np.nan, Y)  # never fold f's answers
                theta, cov = laplace_posterior(A, b, visible, proxy.prior_.mean, proxy.prior_.precision)
                p = probit_predictive(*logit_moments(theta, cov, A, b))[0]  # (k, n_items)
                for g in np.flatnonzero(self.fold_ == f):
                    pred[tgt, g] = p[:, item_codes == g].mean(1)
                evidence[np.ix_(tgt, self.fold_ == f)] = evidence_labels(visible)[:, None]
        self.evidence_ = evidence.astype(str)
        nan = np.full(successes.shape, np.nan)
        return pred, nan, nan
