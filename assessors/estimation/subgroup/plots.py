"""Forest plot of per-subgroup estimates with intervals, DT vs EB (like Fig. 1 of Fogliato et al.)."""
from __future__ import annotations

from typing import Sequence

import numpy as np


def forest_plot(groups: Sequence[str], truth: np.ndarray, dt: tuple, eb: tuple, n: np.ndarray | None = None,
                title: str = ""):
    """Draw DT and EB estimates with intervals per subgroup.

    Parameters
    ----------
    groups : sequence of str, length G
    truth : array of shape (G,)
        Full-data accuracy (drawn as a cross).
    dt, eb : tuple of three arrays of shape (G,)
        ``(estimate, lower, upper)`` of each method.
    n : array of shape (G,), optional
        Sample size per subgroup, appended to the labels.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    G = len(groups)
    order = np.argsort(truth)
    y = np.arange(G)
    fig, ax = plt.subplots(figsize=(8, 0.32 * G + 1.5))
    for (est, lo, hi), off, colour, label in ((dt, 0.17, "tab:grey", "DT (Wilson)"), (eb, -0.17, "tab:blue", "EB (robust EBCI)")):
        est, lo, hi = (np.asarray(a)[order] for a in (est, lo, hi))
        ax.errorbar(est, y + off, xerr=[est - lo, hi - est], fmt="o", ms=4, color=colour, capsize=2, label=label)
    ax.scatter(np.asarray(truth)[order], y, marker="x", color="black", zorder=3, label="full-data truth")
    labels = [str(groups[i]) + (f" (n={int(n[i])})" if n is not None else "") for i in order]
    ax.set_yticks(y, labels, fontsize=7)
    ax.set_xlabel("accuracy")
    ax.set_xlim(-0.02, 1.02)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig
