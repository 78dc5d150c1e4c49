"""Simulated per-item confidences with a known monotone accuracy-confidence relation."""
from __future__ import annotations

import numpy as np
import pandas as pd

from assessors.data.results import Results


def simulate_confidence_results(n_datasets: int = 30, n_variants: int = 3, n_items: int = 100,
                                gamma: float = 2.0, seed: int = 0) -> Results:
    """A :class:`Results` with a ``confidence`` matrix where ``P(correct | c) = c ** gamma``.

    Each dataset draws confidences from its own Beta law (so datasets differ in difficulty);
    ``gamma > 1`` makes the model over-confident, so AVGCONF is biased while a meta-model can learn
    the relation. Prompt variants are separate rows ``sim#v<k>`` (independent draws per item).

    Returns
    -------
    Results
        ``n_variants`` LLM rows x ``n_datasets * n_items`` instances; ``subgroup`` = dataset.
    """
    rng = np.random.default_rng(seed)
    a = rng.uniform(1.0, 8.0, n_datasets)
    b = rng.uniform(0.5, 4.0, n_datasets)
    ds = np.repeat(np.arange(n_datasets), n_items)
    conf = np.stack([rng.beta(a[ds], b[ds]) for _ in range(n_variants)]).astype(np.float32)
    success = (rng.random(conf.shape) < conf ** gamma).astype(np.float32)
    inst = pd.DataFrame({"prompt": np.nan, "subgroup": [f"ds{d:02d}" for d in ds], "target": np.nan},
                        index=[f"ds{d:02d}/{i}" for d, i in zip(ds, np.tile(np.arange(n_items), n_datasets))])
    return Results(inst, [f"sim#v{k}" for k in range(n_variants)], success, confidence=conf,
                   name=f"simulated_confidence_gamma{gamma}")
