"""AIPW / prediction-powered inference for benchmark accuracy, with a pluggable per-item proxy.

With a proxy ``f`` predicting the target's success on every item, the core set a uniform random
sample of ``n`` out of ``N`` items, and the core results ``y``, the estimate of the benchmark
mean is (PPI++ / AIPW, the survey "difference estimator" when ``lam = 1``)::

    mu = (n * mean_core(y) + (N - n) * [lam * mean_rest(f) + mean_core(y - lam * f)]) / N

``lam`` is power-tuned (PPI++, Angelopoulos, Duchi & Zrnic 2023).

Two inference modes:

* ``inference="finite_population"`` (default). The estimand is the finite benchmark mean and the
  unlabeled items are the complement of the core, so the proxy's mean over them is known exactly.
  The variance-optimal ``lam`` is then ``Cov(y, f) / Var(f)`` on the core, and the standard error is
  ``sd(y - lam f) * sqrt((1 - n/N) / n)`` (finite-population correction).
* ``inference="ppi_py"``: ``ppi_py.ppi_mean_ci`` / ``ppi_mean_pointestimate`` (ppi-python) with
  the rest items as the unlabeled sample, reported as is: the paper's superpopulation formulation. We do not use it by default
  because ppi-python assumes an unlabeled sample independent of the labeled one, with a random
  mean ``mean(f_unlabeled)``; its tuned ``lam`` carries the factor ``1/(1 + n/N_unlabeled)`` and its
  interval omits the finite-population correction, which makes it wrong for a core that is a
  large share of the benchmark (e.g. 200 of RTE's 277 items). The two agree when ``n << N``
  (checked in the tests).

Small cores. At 25-50 items a target near 0% or 100% accuracy often has a core on which every
residual ``y - lam f`` is the same, so the plug-in variance is 0 and the Wald interval has zero width
(on the shared score matrices 12% of n=25 interpolation intervals, with 19% coverage among them).
As Agresti-Coull does for a proportion, the variance (never the point estimate) is computed with
``pseudo_counts`` pseudo items of each outcome added at the core's mean proxy value, and the quantile
is Student's t with ``n - 1`` degrees of freedom. ``pseudo_counts=0`` gives the Wald interval. A
target whose core answers are all equal also gets at least the exact (Clopper-Pearson) bounds of
the unseen items' accuracy.

Cross-fitting (``folds > 1``): the proxy's prediction on a core item never uses that item's own
result (each fold is predicted with that fold hidden), which keeps the rectifier unbiased; the
paper's formulation fits and evaluates the proxy on the same core items (``folds=1``).

Several proxies (``proxy`` a list, e.g. the latent posterior and the ridge regression): the
difference estimator's covariate is then their combination ``f = sum_p w_p f_p``, with the weights
``w >= 0`` a non-negative least-squares fit (with intercept) of each target's core answers on the
proxies' out-of-fold predictions (a regression, GREG, estimator). The weights are a function of the
core like ``lam``, so the estimate stays design-consistent whatever the proxies; the t quantile
loses one degree of freedom per proxy. Non-negativity keeps two strongly correlated proxies from
cancelling each other with large weights that would fit the core's noise.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.optimize import nnls
from scipy.stats import t as t_dist
from sklearn.base import clone
from sklearn.utils import get_tags

from assessors.estimation.benchmark.base import BenchmarkEstimator, Estimate
from assessors.estimation.benchmark.proxy import ItemProxy, RidgeProxy


class AIPW(BenchmarkEstimator):
    """Prediction-powered (AIPW) estimate with a valid confidence interval.

    Parameters
    ----------
    proxy : ItemProxy or list of ItemProxy, optional
        Per-item predictor (default: ``RidgeProxy(alpha=10)``, the paper's); a list is combined per
        target by a non-negative regression on the core (see the module docstring).
    folds : int
        Cross-fitting folds over the core set (1: no cross-fitting, as in the paper).
    power_tuning : bool
        Tune ``lam`` (PPI++); False uses ``lam = 1`` (plain PPI).
    inference : {"finite_population", "ppi_py"}
    pseudo_counts : float
        Pseudo successes and as many pseudo failures added to the variance estimate only
        (finite-population mode; see the module docstring). 0: plain Wald interval.

    Attributes
    ----------
    proxies_ : list of ItemProxy
        The fitted proxies; ``proxy_`` is the first.
    """

    has_ci = True

    def __init__(self, core_size: int = 50, seed: int = 0, alpha: float = 0.05, proxy: ItemProxy | None = None,
                 folds: int = 5, power_tuning: bool = True, inference: str = "finite_population",
                 pseudo_counts: float = 2.0):
        super().__init__(core_size, seed, alpha)
        self.proxy = proxy
        self.folds = folds
        self.power_tuning = power_tuning
        self.inference = inference
        self.pseudo_counts = pseudo_counts

    def _fit(self, S, filled, features, rng):
        if self.inference not in ("finite_population", "ppi_py"):
            from assessors.errors import ConfigError

            raise ConfigError(f"AIPW: inference must be 'finite_population' or 'ppi_py', got {self.inference!r}")
        # a proxy that handles missing cells itself gets the raw 0/1/NaN matrix: the imputed
        # one holds column means, which are not labels
        self.proxies_ = [p.fit(S if get_tags(p).input_tags.allow_nan else filled, features, self.core_index_)
                         for p in self._proxy_list()]
        self.proxy_ = self.proxies_[0]
        n = self.core_index_.size
        k = max(1, min(int(self.folds), n))
        self.fold_ = rng.permutation(np.arange(n) % k)

    def _default_proxy(self):
        """The proxy used when ``proxy`` is None."""
        return RidgeProxy()

    def _proxy_list(self) -> list:
        """Unfitted clones of the configured proxies (one or several)."""
        if self.proxy is None:
            return [self._default_proxy()]
        # a Sequence, not only a list: Hydra passes a YAML list of proxies as a ListConfig
        return [clone(p) for p in (self.proxy if isinstance(self.proxy, Sequence) else [self.proxy])]

    def proxy_predictions(self, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Out-of-fold predictions on core cells (k, n_core) and fold-averaged predictions (k, n_items);
        with several proxies, their per-target combination (see the module docstring)."""
        k_folds = int(self.fold_.max()) + 1
        P = len(self.proxies_)
        f_lab = np.empty((P,) + Y.shape)
        f_all = np.zeros((P, Y.shape[0], self.n_items_))
        for j in range(k_folds):
            hide = self.fold_ == j if k_folds > 1 else np.ones(Y.shape[1], dtype=bool)
            Yj = Y.copy()
            if k_folds > 1:
                Yj[:, hide] = np.nan
            for p, proxy in enumerate(self.proxies_):
                pred = proxy.predict(Yj)
                f_lab[p][:, hide] = pred[:, self.core_index_[hide]]
                f_all[p] += pred
        f_all /= k_folds
        if P == 1:
            return f_lab[0], f_all[0]
        w = combination_weights(Y, f_lab)  # (k, P)
        return np.einsum("kp,pkn->kn", w, f_lab), np.einsum("kp,pkn->kn", w, f_all)

    def _estimate(self, Y: np.ndarray) -> Estimate:
        f_lab, f_all = self.proxy_predictions(Y)
        if self.inference == "ppi_py":
            return self._estimate_ppi_py(Y, f_lab, f_all)
        N = self.n_items_
        obs = ~np.isnan(Y)
        n = obs.sum(1).astype(np.float64)
        y = np.where(obs, Y, 0.0)
        f = np.where(obs, f_lab, 0.0)
        ybar = y.sum(1) / n
        fbar = f.sum(1) / n
        dof = np.maximum(n - 1, 1)
        cov = (((y - ybar[:, None]) * (f - fbar[:, None])) * obs).sum(1) / dof
        var_f = (((f - fbar[:, None]) ** 2) * obs).sum(1) / dof
        lam = self._power_lambda(cov, var_f)
        # rest = items whose result is not observed (outside the core, or missing in it)
        core_f_all = np.where(obs, f_all[:, self.core_index_], 0.0).sum(1)
        n_rest = N - n
        rest_mean = np.divide(f_all.sum(1) - core_f_all, n_rest, out=np.zeros_like(n), where=n_rest > 0)
        r = np.where(obs, y - lam[:, None] * f, 0.0)
        rbar = r.sum(1) / n
        theta_rest = lam * rest_mean + rbar
        point = (n * ybar + n_rest * theta_rest) / N
        var_r = self._residual_variance(r, rbar, obs, n, lam, fbar)
        se = np.sqrt(var_r * np.clip(1 - n / N, 0, 1) / n)
        return self._t_interval(Y, point, se, np.maximum(n - len(self.proxies_), 1))

    def _power_lambda(self, num: np.ndarray, den: np.ndarray) -> np.ndarray:
        """The proxy's coefficient ``lam`` (k,) of each target: with ``power_tuning``, the variance-minimising
        ``num / den`` (k,) clipped to [0, 1] (0 where ``den`` vanishes); without it, 1."""
        if not self.power_tuning:
            return np.ones_like(num)
        return np.clip(np.divide(num, den, out=np.zeros_like(num), where=den > 1e-12), 0.0, 1.0)

    def _t_interval(self, Y: np.ndarray, point: np.ndarray, se: np.ndarray, dof) -> Estimate:
        """``point`` (k,) with Student's t interval ``point -+ t(1 - alpha/2, dof) se`` (``dof`` scalar or (k,)),
        widened by :meth:`_one_class_hull` for targets whose core answers ``Y`` (k, n_core) are all equal."""
        q = t_dist.ppf(1 - self.alpha / 2, dof)
        return Estimate(point, *self._one_class_hull(Y, point - q * se, point + q * se))

    def _one_class_hull(self, Y: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(lo, hi)`` widened, for targets whose core answers are all equal, to hold the exact
        (Clopper-Pearson) interval of the unseen items' accuracy given ``n`` equal answers.

        With every answer the same, the residual variance says nothing about the spread the proxy
        missed, so the interval cannot rest on it alone (on the shared score matrices such targets were
        under-covered). All ``n`` correct bounds the unseen
        accuracy below by ``(alpha/2)^(1/n)``, all wrong bounds it above by ``1 - (alpha/2)^(1/n)``.
        """
        obs = ~np.isnan(Y)
        n = obs.sum(1)
        pos = np.where(obs, Y, 0.0).sum(1)
        q = (self.alpha / 2) ** (1.0 / np.maximum(n, 1))
        N = self.n_items_
        lo = np.where(pos == n, np.minimum(lo, (n + (N - n) * q) / N), lo)
        hi = np.where(pos == 0, np.maximum(hi, (N - n) * (1 - q) / N), hi)
        return lo, hi

    def _residual_variance(self, r, rbar, obs, n, lam, fbar, k=None, share=0.5):
        """Sample variance of the core residuals, with ``2 k`` (default ``k = pseudo_counts``) pseudo items.

        A pseudo item has proxy value ``fbar`` and result 1 (a ``share`` of the pseudo items) or 0,
        so its residual is ``1 - lam fbar`` or ``-lam fbar``; the pooled variance over ``n + 2k``
        values is computed from the core's sum of squares and the pseudo residuals' (exact pooling).
        ``share = 0.5`` is Agresti-Coull's choice, the largest variance; the stratified estimator
        passes the stratum's proxy mean, what the proxy expects of the stratum's items.
        """
        ss = (((r - rbar[:, None]) ** 2) * obs).sum(1)
        k = np.asarray(float(self.pseudo_counts) if k is None else k, dtype=np.float64)
        if np.all(k <= 0):
            return ss / np.maximum(n - 1, 1)
        m = n + 2 * k
        pseudo_mean = share - lam * fbar
        grand = (n * rbar + 2 * k * pseudo_mean) / m
        # within-group sums of squares plus between-group terms (pseudo residuals are 1 or 0 minus lam fbar)
        ss_all = ss + n * (rbar - grand) ** 2 + 2 * k * share * (1 - share) + 2 * k * (pseudo_mean - grand) ** 2
        return ss_all / (m - 1)

    def _estimate_ppi_py(self, Y, f_lab, f_all) -> Estimate:
        import ppi_py

        N = self.n_items_
        rest = np.setdiff1d(np.arange(N), self.core_index_)
        pts, lo, hi = [], [], []
        lam = None if self.power_tuning else 1.0
        for i in range(Y.shape[0]):
            o = ~np.isnan(Y[i])
            yi, fi, fu = Y[i, o], f_lab[i, o], f_all[i, rest]
            # superpopulation estimate of the mean item, as in the paper (the rest items are the
            # unlabeled sample); used as is, without blending in the observed core part
            pts.append(float(np.squeeze(ppi_py.ppi_mean_pointestimate(yi, fi, fu, lam=lam))))
            l_, h_ = ppi_py.ppi_mean_ci(yi, fi, fu, alpha=self.alpha, lam=lam)
            lo.append(float(np.squeeze(l_)))
            hi.append(float(np.squeeze(h_)))
        return Estimate(np.array(pts), np.array(lo), np.array(hi))


def combination_weights(Y: np.ndarray, F: np.ndarray) -> np.ndarray:
    """Per-target non-negative least-squares weights, with intercept, of core answers on proxies.

    Parameters
    ----------
    Y : ndarray of shape (k, n_core)
        Core answers, NaN where not observed (left out of the fit).
    F : ndarray of shape (P, k, n_core)
        The proxies' out-of-fold predictions on the core cells.

    Returns
    -------
    ndarray of shape (k, P)
        Zero for a target whose observed answers are all equal (nothing to regress).
    """
    W = np.zeros((Y.shape[0], F.shape[0]))
    for i in range(Y.shape[0]):
        o = ~np.isnan(Y[i])
        X = F[:, i, o].T  # (n_obs, P)
        y = Y[i, o]
        if o.sum() < 2 or np.ptp(y) == 0:
            continue
        W[i] = nnls(X - X.mean(0), y - y.mean())[0]  # the intercept by centring
    return W
