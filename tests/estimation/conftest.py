import numpy as np
import pytest
from threadpoolctl import threadpool_limits


@pytest.fixture(autouse=True, scope="session")
def _one_blas_thread():
    # Small linear algebra: extra BLAS threads only contend on the shared 2-core machine.
    with threadpool_limits(1):
        yield


def simulate(n_llms=50, n_items=400, dims=3, seed=0):
    """Low-rank logistic LLM x item success matrix with its cell probabilities."""
    rng = np.random.default_rng(seed)
    th = rng.normal(size=(n_llms, dims))
    a = rng.normal(0.6, 0.5, size=(n_items, dims))
    b = rng.normal(0, 1.5, size=n_items)
    p = 1 / (1 + np.exp(-(th @ a.T - b)))
    return (rng.random(p.shape) < p).astype(np.float32), p
