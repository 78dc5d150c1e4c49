"""AIPW on a core set drawn by stratified random sampling over the latent model's predicted difficulty.

Design, fixed from the source LLMs before any target answer: the items are sorted by the latent
model's population success probability ``pbar_j`` (:meth:`LatentProxy.population_moments`) and cut
into ``strata`` strata of (nearly) equal size ``N_h``. Each stratum gets ``n_h`` items drawn
uniformly without replacement; ``allocation="neyman"`` takes ``n_h`` proportional to ``N_h sd_h``,
with ``sd_h^2`` the stratum's mean ``p (1 - p)``: the residual variance a target like the sources
would leave if the model were right (near 0 for items every LLM passes or fails, largest near
``p = 1/2``), so the answers go where the proxy cannot predict them. ``"proportional"`` takes
``n_h`` proportional to ``N_h``.

Estimator (stratified difference estimator): in each stratum, the observed answers plus, for the
other ``N_h - n_h`` items, ``lam`` times the mean proxy prediction over them plus the mean core
residual ``y - lam f`` of the stratum; summed over strata and divided by ``N``. With the
within-stratum uniform draws, each stratum's term is unbiased for the stratum total whatever the
proxy, as in :class:`~assessors.estimation.benchmark.aipw.AIPW` (the proxy is cross-fitted the
same way). The variance is ``sum_h (N_h / N)^2 (1 - n_h / N_h) s_h^2 / n_h``, where ``s_h^2`` is
the stratum's residual variance with ``2 pseudo_counts n_h / n`` pseudo items (the unstratified
estimator's pseudo mass, shared out over the strata), and the quantile is Student's t with
Satterthwaite's degrees of freedom ``(sum_h v_h)^2 / sum_h v_h^2 / (n_h - 1)`` for the strata's
variance terms ``v_h``, at most ``n - H`` (one fewer per extra proxy): Neyman allocation gives the
strata it expects to be easy to predict two or three answers, and a variance term resting on so few
answers is itself uncertain. ``lam`` minimises that variance (pooled
within-stratum covariances), clipped to [0, 1].

Pseudo items. With ``pseudo_share="proxy"`` a stratum's pseudo items succeed in the share the
proxy predicts for its core items (kept within [0.05, 0.95], so no stratum's variance is 0), so they
add the variance ``fbar_h (1 - fbar_h)`` the model expects there; ``"half"`` (Agresti-Coull's 50/50) adds the largest variance, 0.25, to every stratum.
The stratification puts the easiest and hardest items in strata of their own, where the residuals
are near 0 and a 50/50 pseudo item dominates the variance estimate: on the harness's score matrices
``"half"`` over-covered (0.985-0.988 at n = 50).
"""
from __future__ import annotations

import numpy as np

from assessors.errors import ConfigError
from assessors.estimation.benchmark.aipw import AIPW
from assessors.estimation.benchmark.base import cached
from assessors.estimation.benchmark.latent_proxy import LatentProxy


def allocate(n: int, sizes: np.ndarray, sd: np.ndarray, minimum: int) -> np.ndarray:
    """Neyman allocation of ``n`` draws over strata of ``sizes`` (H,) and predicted ``sd`` (H,): at least
    ``minimum`` and at most ``sizes[h]`` per stratum, then one draw at a time to the stratum furthest
    below its share ``n sizes[h] sd[h] / sum(sizes sd)``. Shape (H,)."""
    sizes = np.asarray(sizes, dtype=int)
    weight = sizes * np.maximum(np.asarray(sd, dtype=np.float64), 1e-6)
    ideal = n * weight / weight.sum()
    out = np.minimum(int(minimum), sizes)
    while out.sum() < min(n, sizes.sum()):
        out[np.argmax(np.where(out < sizes, ideal - out, -np.inf))] += 1
    return out


def design_moments(est: AIPW, S: np.ndarray, features) -> tuple[np.ndarray, np.ndarray]:
    """The population moments (:meth:`LatentProxy.population_moments`, two arrays of shape (n_items,))
    of the first of ``est``'s proxies that has them, fitted on the source matrix ``S``: a design
    fixed before any target answer, and so kept per source split (in this process) for every trial
    and size on it. The model's moments depend on its parameters and ``S`` alone (it has no use for
    ``features``)."""
    model = next((p for p in est._proxy_list() if hasattr(p, "population_moments")), None)
    if model is None:
        raise ConfigError(f"{type(est).__name__}: the design needs a LatentProxy among its proxies (proxy=...)")
    return cached("design_moments", S, (repr(model),),
                  lambda: model.fit(S, features, []).population_moments(), disk=False)


class LatentDesignAIPW(AIPW):
    """AIPW on a core drawn by a design the latent model fixes from the source LLMs alone
    (:func:`design_moments`); its proxy is ``LatentProxy()`` unless ``proxy`` says otherwise."""

    selects_core = True
    selects_on_raw = True  # the item fit leaves missing cells out of the likelihood

    def _default_proxy(self):
        return LatentProxy()


class StratifiedAIPW(LatentDesignAIPW):
    """AIPW with the latent posterior as proxy on a core stratified by predicted difficulty.

    Parameters
    ----------
    proxy : LatentProxy or list of ItemProxy, optional
        Proxy and design model (default ``LatentProxy()``); with a list, the first proxy that has
        ``population_moments`` is the design model and all of them are combined as in AIPW.
    strata : int
        Number of strata H (fewer when ``core_size < strata * min_per_stratum``).
    allocation : {"neyman", "proportional"}
    min_per_stratum : int
        Draws per stratum at least (2: a within-stratum variance needs two answers).
    pseudo_share : {"proxy", "half"}
        Success share of a stratum's variance-only pseudo items (see the module docstring).

    Attributes
    ----------
    stratum_ : ndarray of shape (n_items,)
        Stratum of every item.
    """

    def __init__(self, core_size: int = 50, seed: int = 0, alpha: float = 0.05, proxy: LatentProxy | None = None,
                 folds: int = 5, power_tuning: bool = True, pseudo_counts: float = 2.0, strata: int = 5,
                 allocation: str = "neyman", min_per_stratum: int = 2, pseudo_share: str = "proxy"):
        super().__init__(core_size, seed, alpha, proxy, folds, power_tuning, "finite_population", pseudo_counts)
        self.strata = strata
        self.allocation = allocation
        self.min_per_stratum = min_per_stratum
        self.pseudo_share = pseudo_share

    def _select_core(self, S, features, rng):
        if self.allocation not in ("neyman", "proportional"):
            raise ConfigError(f"StratifiedAIPW: allocation must be 'neyman' or 'proportional', got {self.allocation!r}")
        if self.pseudo_share not in ("proxy", "half"):
            raise ConfigError(f"StratifiedAIPW: pseudo_share must be 'proxy' or 'half', got {self.pseudo_share!r}")
        pbar, var = design_moments(self, S, features)
        H = max(1, min(int(self.strata), self.core_size // max(int(self.min_per_stratum), 1), S.shape[1]))
        groups = np.array_split(np.argsort(pbar, kind="stable"), H)
        self.stratum_ = np.empty(S.shape[1], dtype=int)
        for h, g in enumerate(groups):
            self.stratum_[g] = h
        sizes = np.array([g.size for g in groups])
        sd = np.array([np.sqrt(var[g].mean()) for g in groups]) if self.allocation == "neyman" else np.ones(H)
        n_h = allocate(self.core_size, sizes, sd, int(self.min_per_stratum))
        return np.sort(np.concatenate([rng.choice(g, size=k, replace=False) for g, k in zip(groups, n_h)]))

    def _estimate(self, Y):
        f_lab, f_all = self.proxy_predictions(Y)
        N = self.n_items_
        obs = ~np.isnan(Y)
        y, f = np.where(obs, Y, 0.0), np.where(obs, f_lab, 0.0)
        n_total = obs.sum(1).astype(np.float64)
        core_h = self.stratum_[self.core_index_]
        H = int(self.stratum_.max()) + 1
        parts = []
        for h in range(H):
            c = core_h == h
            o = obs[:, c]
            n = o.sum(1).astype(np.float64)
            n1 = np.maximum(n, 1)
            ybar, fbar = y[:, c].sum(1) / n1, f[:, c].sum(1) / n1
            dof = np.maximum(n - 1, 1)
            cov = (((y[:, c] - ybar[:, None]) * (f[:, c] - fbar[:, None])) * o).sum(1) / dof
            var_f = (((f[:, c] - fbar[:, None]) ** 2) * o).sum(1) / dof
            N_h = float((self.stratum_ == h).sum())
            w = (N_h / N) ** 2 * np.clip(1 - n / N_h, 0, 1) / n1  # the stratum's weight in the variance
            parts.append((c, o, n, n1, ybar, fbar, cov, var_f, N_h, w))
        lam = self._power_lambda(sum(p[9] * p[6] for p in parts), sum(p[9] * p[7] for p in parts))
        point, var, var2_dof = np.zeros(Y.shape[0]), np.zeros(Y.shape[0]), np.zeros(Y.shape[0])
        for h, (c, o, n, n1, ybar, fbar, _, _, N_h, w) in enumerate(parts):
            items = self.stratum_ == h
            seen_f = np.where(o, f_all[:, self.core_index_[c]], 0.0).sum(1)
            rest = N_h - n
            rest_mean = np.divide(f_all[:, items].sum(1) - seen_f, rest, out=np.zeros_like(n), where=rest > 0)
            r = np.where(o, y[:, c] - lam[:, None] * f[:, c], 0.0)
            rbar = r.sum(1) / n1
            point += (y[:, c].sum(1) + rest * (lam * rest_mean + rbar)) / N
            k = float(self.pseudo_counts) * n / np.maximum(n_total, 1)
            share = np.clip(fbar, 0.05, 0.95) if self.pseudo_share == "proxy" else 0.5
            s2 = np.where(n > 0, self._residual_variance(r, rbar, o, n, lam, fbar, k, share), 0.25)
            var += w * s2
            var2_dof += (w * s2) ** 2 / np.maximum(n - 1, 1)
        # Satterthwaite's degrees of freedom: few when the variance rests on strata with few answers
        dof = np.divide(var ** 2, var2_dof, out=np.ones_like(var), where=var2_dof > 0)
        dof = np.clip(dof, 1, np.maximum(n_total - H - len(self.proxies_) + 1, 1))
        return self._t_interval(Y, point, np.sqrt(var), dof)
