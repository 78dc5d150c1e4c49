"""Draw a small evaluation sample per subgroup, proportional to subgroup size."""
from __future__ import annotations

import numpy as np

from assessors.errors import ConfigError


def allocation(sizes: np.ndarray, n_total: int, min_per_group: int = 10) -> np.ndarray:
    """Items to sample per subgroup: ``max(min_per_group, round(n_total * size / sum))``, capped by size.

    Parameters
    ----------
    sizes : array of shape (n_groups,)
    n_total : int
        Target total sample size (the minimum can push the total above it).
    min_per_group : int
    """
    sizes = np.asarray(sizes, dtype=int)
    if np.any(sizes < 1):
        raise ConfigError("every subgroup needs at least one item")
    n = np.maximum(min_per_group, np.round(n_total * sizes / sizes.sum())).astype(int)
    return np.minimum(n, sizes)


def draw_sample(groups: np.ndarray, n_per_group: np.ndarray, rng: np.random.Generator) -> list[np.ndarray]:
    """For each subgroup ``g`` (``groups`` holds codes 0..G-1 per item), ``n_per_group[g]`` item
    positions drawn without replacement."""
    return [rng.choice(np.flatnonzero(groups == g), size=int(n), replace=False)
            for g, n in enumerate(n_per_group)]
