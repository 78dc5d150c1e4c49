"""The one 2PL ability posterior and the one sigmoid, tested by simulation."""
import numpy as np

from assessors.irt_math import laplace_posterior, map_ability, sigmoid


def simulate(k=300, n=60, D=2, seed=0, missing=0.1):
    rng = np.random.default_rng(seed)
    A = np.abs(rng.normal(1.0, 0.4, (n, D)))
    b = rng.normal(0, 1, n)
    mu, cov = np.array([0.2, -0.1])[:D], np.eye(D) * 0.8 + 0.2
    theta = rng.multivariate_normal(mu, cov, size=k)
    Y = (rng.random((k, n)) < sigmoid(theta @ A.T - b)).astype(float)
    Y[rng.random(Y.shape) < missing] = np.nan
    return A, b, Y, theta, mu, np.linalg.inv(cov)


def log_posterior(th, A, b, y, mu, prec):
    """Log posterior of abilities ``th`` (g, D) given one LLM's answers ``y`` (n,), up to a constant."""
    z = th @ A.T - b
    obs = np.isfinite(y)
    ll = (np.where(obs, np.nan_to_num(y) * z, 0) - np.where(obs, np.logaddexp(0, z), 0)).sum(1)
    d = th - mu
    return ll - 0.5 * np.einsum("gd,de,ge->g", d, prec, d)


def test_recovers_simulated_abilities():
    """Abilities drawn from the prior, 2PL answers on 200 items: the MAP tracks the truth."""
    A, b, Y, theta, mu, prec = simulate(k=300, n=200)
    th = map_ability(A, b, Y, mu, prec)
    assert th.shape == (300, 2)
    for d in range(2):
        assert np.corrcoef(th[:, d], theta[:, d])[0, 1] > 0.8
    # the sum (the direction the items measure best) is recovered closely, without bias
    err = th.sum(1) - theta.sum(1)
    assert abs(err.mean()) < 0.1 and np.sqrt((err ** 2).mean()) < 0.45


def test_matches_brute_force_grid_map():
    """The Newton MAP is the maximiser of the log posterior found by a fine grid search."""
    A, b, Y, _, mu, prec = simulate(k=12, n=25, seed=3)
    th = map_ability(A, b, Y, mu, prec)
    g = np.linspace(-4, 4, 401)
    grid = np.stack(np.meshgrid(g, g, indexing="ij"), -1).reshape(-1, 2)
    for i in range(len(Y)):
        lp = log_posterior(grid, A, b, Y[i], mu, prec)
        best = grid[np.argmax(lp)]
        assert np.abs(th[i] - best).max() <= g[1] - g[0], (i, th[i], best)
        assert log_posterior(th[i:i + 1], A, b, Y[i], mu, prec)[0] >= lp.max() - 1e-9


def test_one_class_answers_converge_with_capped_steps():
    """All answers correct (a flat likelihood on one side): capped steps still reach the MAP, and
    the Laplace covariance is the inverse negative Hessian there."""
    rng = np.random.default_rng(5)
    A, b = np.abs(rng.normal(2.0, 0.5, (30, 1))), rng.normal(-3, 1, 30)
    mu, prec = np.zeros(1), np.eye(1) / 25.0  # a wide prior: the uncapped first step overshoots far
    Y = np.ones((1, 30))
    th, cov = laplace_posterior(A, b, Y, mu, prec, max_step=1.0)
    g = np.linspace(-10, 30, 40001)[:, None]
    best = g[np.argmax(log_posterior(g, A, b, Y[0], mu, prec))]
    assert abs(th[0, 0] - best[0]) < 1e-3
    p = sigmoid(th @ A.T - b)
    H = ((p * (1 - p))[0][:, None] * A).T @ A + prec
    np.testing.assert_allclose(cov[0], np.linalg.inv(H), rtol=1e-8)


def test_no_answers_give_the_prior_and_per_llm_offsets_shift_the_logit():
    A, b, Y, _, mu, prec = simulate(k=4, n=10, seed=2)
    th, cov = laplace_posterior(A, b, np.full((2, 10), np.nan), mu, prec)
    np.testing.assert_allclose(th, np.tile(mu, (2, 1)))
    np.testing.assert_allclose(cov, np.tile(np.linalg.inv(prec), (2, 1, 1)))
    # a (k, n) difficulty is a per-LLM offset: equal rows give the shared-difficulty answer
    th_shared = map_ability(A, b, Y, mu, prec)
    th_rows = map_ability(A, np.tile(b, (4, 1)), Y, mu, prec)
    np.testing.assert_allclose(th_rows, th_shared, atol=1e-10)


def test_sigmoid_is_clipped_and_symmetric():
    z = np.array([-1e4, -30.0, -1.0, 0.0, 1.0, 30.0, 1e4])
    p = sigmoid(z)
    assert np.all((p > 0) & (p < 1)) and p[3] == 0.5
    np.testing.assert_allclose(p + sigmoid(-z), 1.0)
    np.testing.assert_allclose(sigmoid(np.array([2.0])), 1 / (1 + np.exp(-2.0)))


def test_sigmoid_in_place_gives_the_same_numbers():
    z = np.random.default_rng(0).normal(0, 20, (3, 4, 50)).astype(np.float32)
    expected = sigmoid(z)
    got = sigmoid(z, out=z)
    assert got is z and got.dtype == np.float32
    np.testing.assert_array_equal(got, expected)
