"""Simulated per-item confidences with a known monotone accuracy-confidence relation."""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.special import logit

from assessors.data.results import Results
from assessors.irt_math import sigmoid


def simulate_confidence_results(n_datasets: int = 30, n_variants: int = 3, n_items: int = 100,
                                gamma: float = 2.0, shift_sd: float = 0.0, seed: int = 0) -> Results:
    """A :class:`Results` with a ``confidence`` matrix where ``P(correct | c) = c ** gamma``.

    Each dataset draws confidences from its own Beta law (so datasets differ in difficulty);
    ``gamma > 1`` makes the model over-confident, so AVGCONF is biased while a meta-model can learn
    the relation. Prompt variants are separate rows ``sim#v<k>`` (independent draws per item).
    ``shift_sd > 0`` moves each dataset's relation by its own logit shift ``N(0, shift_sd)``,
    ``P(correct | c) = sigmoid(logit(c ** gamma) + shift)``: a miscalibration that differs between
    datasets and that no confidence profile reveals, so it bounds every label-free method.

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
    p = conf.astype(float) ** gamma
    if shift_sd > 0:  # drawn only then, so shift_sd=0 keeps each seed's data as before
        shift = rng.normal(0.0, shift_sd, n_datasets)[ds]
        p = sigmoid(logit(np.clip(p, 1e-9, 1 - 1e-9)) + shift)
    success = (rng.random(conf.shape) < p).astype(np.float32)
    inst = pd.DataFrame({"prompt": np.nan, "subgroup": [f"ds{d:02d}" for d in ds], "target": np.nan},
                        index=[f"ds{d:02d}/{i}" for d, i in zip(ds, np.tile(np.arange(n_items), n_datasets))])
    return Results(inst, [f"sim#v{k}" for k in range(n_variants)], success, confidence=conf,
                   name=f"simulated_confidence_gamma{gamma}")
