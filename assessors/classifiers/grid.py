"""A hyper-parameter grid over one estimator: the object every ``conf/classifier/*.yaml`` builds."""
from __future__ import annotations

from typing import Any

from sklearn.base import clone
from sklearn.model_selection import ParameterGrid

from assessors.errors import ConfigError


def _fmt(value: Any) -> str:
    # repr keeps strings quoted and floats exact, so names are unambiguous and stable.
    return repr(value) if isinstance(value, str) else f"{value}"


class ParamGrid:
    """Unfitted candidate classifiers: one estimator crossed with a parameter grid.

    The assessors fit every candidate and keep the best by validation AUC (specific
    assessor) or by average win rate (generic assessor); this class only enumerates.

    Parameters
    ----------
    estimator : sklearn-style estimator
        Prototype with ``fit``/``predict_proba``; it is never fitted, only cloned.
    param_grid : dict[str, list] or None
        ``{param: [values, ...]}`` as in :class:`sklearn.model_selection.ParameterGrid`.
        None or ``{}`` yields the estimator alone.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> [name for name, _ in ParamGrid(LogisticRegression(), {"C": [0.1, 1]}).candidates()]
    ['LogisticRegression(C=0.1)', 'LogisticRegression(C=1)']
    """

    def __init__(self, estimator, param_grid: dict[str, list] | None = None):
        self.estimator = estimator
        self.param_grid = param_grid

    def _grid(self) -> dict[str, list]:
        grid = dict(self.param_grid or {})
        for key, values in grid.items():
            # OmegaConf ListConfig is not a list; accept any sized iterable but not a bare scalar/str.
            if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
                raise ConfigError(
                    f"param_grid[{key!r}] must be a list of values, got {values!r}; write e.g. {key}: [{values}]"
                )
            grid[key] = list(values)
            if not grid[key]:
                raise ConfigError(f"param_grid[{key!r}] is an empty list: give at least one value")
        valid = self.estimator.get_params(deep=True)
        unknown = sorted(k for k in grid if k not in valid)
        if unknown:
            raise ConfigError(
                f"param_grid names {unknown} that {type(self.estimator).__name__} does not accept; "
                f"valid parameters: {sorted(valid)}"
            )
        return grid

    def candidates(self) -> list[tuple[str, Any]]:
        """Named, unfitted, independent clones, one per grid point.

        Returns
        -------
        list of (str, estimator)
            Names look like ``"LogisticRegression(C=0.1)"`` (grid keys in sorted order);
            each estimator is a fresh :func:`sklearn.base.clone` with the grid point set.
        """
        base = type(self.estimator).__name__
        out = []
        for point in ParameterGrid(self._grid()):
            est = clone(self.estimator).set_params(**point)
            args = ", ".join(f"{k}={_fmt(v)}" for k, v in sorted(point.items()))
            out.append((f"{base}({args})", est))
        return out

    def __len__(self) -> int:
        return len(ParameterGrid(self._grid()))

    def __repr__(self) -> str:
        return f"ParamGrid({self.estimator!r}, param_grid={self.param_grid!r})"
