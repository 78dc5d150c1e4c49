"""Design-unbiased accuracy estimate for an adaptive question sequence (sequential difference estimator).

The model's estimate of a new LLM's accuracy (the posterior-predictive mean over the target
prompts) is biased when the latent model is wrong for that LLM, and information-greedy picks are not a
sample of the target, so their raw mean is biased too. The random part of a sequence fixes that: an
``explore`` step (every step under ``criterion="random"``) asks the first prompt of the seeded random
order not asked yet, which, given everything before it, is a uniform draw from the prompts not asked
yet. At such a step ``t`` (prompt ``j_t``, answer ``y_t``), with ``p^(t-1)`` the posterior-predictive
success probabilities given the answers *before* ``t``::

    target = pool:   Z_t = ( sum_{asked before t} y + sum_{not asked} p^(t-1) + N_rest (y_t - p^(t-1)_{j_t}) ) / N
    other target:    Z_t = mean_target p^(t-1) + (y_t - p^(t-1)_{j_t})

``E[Z_t | past] `` is the pool's accuracy (first form: exactly, a finite-population difference
estimator), or the target's predicted accuracy plus the mean residual ``y - p`` over the prompts not
asked yet (second form: unbiased for the target when the pool is a random sample of the same prompt
population, e.g. a random prompt split). The ``Z_t - mu`` are martingale differences, so their mean
is unbiased whatever the adaptive picks in between did, and ``var(Z) / K`` over the ``K`` random
steps estimates its variance (the sequential "active inference" argument: Zrnic & Candes, *Active
Statistical Inference*, 2024; Kossen et al., *Active Testing*, 2021). The interval is Student's t
with ``K - 1`` degrees of freedom. With a handful of binary answers the sample variance is often
near 0 (every residual of the same sign and size), so it is floored by the variance the model
expects for each step, ``mean p (1 - p)`` over the prompts not asked yet (times ``(N_rest / N)^2``;
over the target prompts for another target), as
pseudo-counts floor the interval of :class:`~assessors.estimation.benchmark.aipw.AIPW`. Survey libraries (samplics, statsmodels' weighted statistics)
assume a design fixed before sampling and ppi-python assumes predictions independent of the
labelled sample; neither holds for a sequence whose predictor is refitted after every answer.

An unanswered random draw (the endpoint failed) is left out, which assumes the failures are
unrelated to success. A random step counts only if the prompt asked there is the one the seeded
order gives (a client that answered other prompts than proposed does not get a design estimate it
did not earn).

The *composite* estimate shrinks the design estimate toward the model's: with the model's
variance ``v_m = sd_model^2 + bias_sd^2`` (its posterior spread plus the between-LLM variance of its
bias, ``bias_sd`` set from validation LLMs) and the design variance ``v_d``, it is
``model + v_m / (v_m + v_d) * (design - model)`` (a Fay-Herriot-type composite), with variance
``v_m v_d / (v_m + v_d)``.
"""
from __future__ import annotations

import numpy as np
from scipy.stats import norm
from scipy.stats import t as t_dist


def random_steps(selector, asked) -> np.ndarray:
    """Steps of ``asked`` (pool positions, in asking order) that were uniform draws from the untaken pool.

    Returns
    -------
    ndarray of int, shape (K,)
    """
    order = selector.order_
    taken = np.zeros(len(order), dtype=bool)
    steps = []
    for t, j in enumerate(np.asarray(asked, dtype=int)):
        if selector.criterion == "random" or selector._is_explore(t):
            free = order[~taken[order]]
            if len(free) and free[0] == j:
                steps.append(t)
        taken[j] = True
    return np.asarray(steps, dtype=int)


def _prefix_predictions(selector, asked: np.ndarray, y: np.ndarray, t: int):
    """What step ``t`` needs from the posterior predictive given the answers before it (memoised on the
    selector: the history of an onboarding run only grows).

    Returns ``(p_pool, mean_target, var_target)``: probabilities on the whole pool when the target is
    the pool (else on the prompt asked at ``t`` only, the rest at NaN), the target's mean probability
    and its mean ``p (1 - p)``.
    """
    key = (asked[:t + 1].tobytes(), np.nan_to_num(y[:t], nan=-1).tobytes())
    memo = selector.memo_
    if key not in memo:
        ok = np.isfinite(y[:t])
        post = selector.posterior(asked[:t][ok], y[:t][ok])
        if selector.target_is_pool_:
            p_pool = np.asarray(selector.assessor_.predict_posterior(selector.X_pool_, post)[0][0], np.float64)
            p_target = p_pool
        else:  # the pool's probabilities are needed at the asked prompt only
            p_pool = np.full(len(selector.order_), np.nan)
            p_pool[asked[t]] = selector.assessor_.predict_posterior(selector.X_pool_[asked[t:t + 1]], post)[0][0, 0]
            p_target = np.asarray(selector.predict_target(post), np.float64)
        memo[key] = (p_pool, float(p_target.mean()), float(np.mean(p_target * (1 - p_target))))
    return memo[key]


def step_values(selector, asked, answers) -> tuple[np.ndarray, np.ndarray]:
    """``Z_t`` of every answered random step (see the module docstring) and the variance the model
    expects for it, each of shape (K,)."""
    asked = np.asarray(asked, dtype=int)
    y = np.asarray(answers, dtype=np.float64)
    N = len(selector.order_)
    zs, vs = [], []
    for t in random_steps(selector, asked):
        if not np.isfinite(y[t]):
            continue
        p_pool, mean_target, var_target = _prefix_predictions(selector, asked, y, t)
        residual = y[t] - p_pool[asked[t]]
        if selector.target_is_pool_:
            rest = np.ones(N, dtype=bool)
            rest[asked[:t]] = False
            vs.append(float(np.mean(p_pool[rest] * (1 - p_pool[rest]))) * (rest.sum() / N) ** 2)
            before = np.where(np.isfinite(y[:t]), y[:t], p_pool[asked[:t]])  # unanswered: the model's guess
            zs.append((before.sum() + p_pool[rest].sum() + rest.sum() * residual) / N)
        else:
            vs.append(var_target)  # the pool is taken to be like the target
            zs.append(mean_target + residual)
    return np.asarray(zs, dtype=np.float64), np.asarray(vs, dtype=np.float64)


def design_estimate(selector, asked, answers, level: float = 0.9) -> dict:
    """Sequential difference estimate of the accuracy on the target prompts, with a ``level`` t-interval.

    Returns
    -------
    dict with ``accuracy``, ``low``, ``high``, ``sd`` (standard error) and ``n_random`` (K); the
    first four are None with fewer than 2 answered random steps.
    """
    z, v = step_values(selector, asked, answers)
    k = len(z)
    if k < 2:
        return {"accuracy": None, "low": None, "high": None, "sd": None, "n_random": k}
    mean, se = float(z.mean()), float(np.sqrt(max(z.var(ddof=1), v.mean()) / k))
    q = float(t_dist.ppf(0.5 + level / 2, k - 1))
    return {"accuracy": mean, "low": max(0.0, mean - q * se), "high": min(1.0, mean + q * se), "sd": se,
            "n_random": k}


def composite(model: dict, design: dict, bias_sd: float, level: float = 0.9) -> dict:
    """Precision-weighted combination of the model estimate (``accuracy``, ``sd``) and the design estimate.

    Falls back to the model estimate (weight 0) when the design estimate is unavailable.
    """
    v_m = model["sd"] ** 2 + float(bias_sd) ** 2
    if design["accuracy"] is None:
        w, mean, sd = 0.0, model["accuracy"], float(np.sqrt(v_m))
    else:
        v_d = max(design["sd"] ** 2, 1e-12)
        w = v_m / (v_m + v_d)
        mean = model["accuracy"] + w * (design["accuracy"] - model["accuracy"])
        sd = float(np.sqrt(v_m * v_d / (v_m + v_d)))
    z = float(norm.ppf(0.5 + level / 2))
    return {"accuracy": float(mean), "low": max(0.0, mean - z * sd), "high": min(1.0, mean + z * sd), "sd": sd,
            "weight": float(w)}
