"""The MLP body shared by the torch models (the MLP classifier, the latent assessor's item network),
without Lightning, so a model trained by a plain loop does not import it."""
from __future__ import annotations

from torch import nn


def mlp_layers(n_features: int, hidden_sizes, dropout: float, n_out: int = 1) -> nn.Sequential:
    """[Linear -> ReLU -> Dropout] per hidden size, then Linear(n_out): maps (batch, n_features) to (batch, n_out)."""
    layers, width = [], n_features
    for h in hidden_sizes:
        layers += [nn.Linear(width, h), nn.ReLU(), nn.Dropout(dropout)]
        width = h
    layers.append(nn.Linear(width, n_out))
    return nn.Sequential(*layers)
