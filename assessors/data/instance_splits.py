"""Instance splits: random (the paper's 56/14/30), held-out subgroups (OOD) and predefined columns."""
from __future__ import annotations

import logging
from typing import Mapping, Sequence

import numpy as np

from assessors.data.results import Results
from assessors.data.split_base import InstanceSplit, match, split_sizes
from assessors.errors import ConfigError, DataError

log = logging.getLogger("assessors.data")


def _random_parts(ids: np.ndarray, sizes: tuple[int, int, int], rng: np.random.Generator) -> list[np.ndarray]:
    perm = rng.permutation(len(ids))
    n_train, n_val, _ = sizes
    return [np.sort(perm[:n_train]), np.sort(perm[n_train:n_train + n_val]), np.sort(perm[n_train + n_val:])]


class RandomInstanceSplit(InstanceSplit):
    """Random train/val/test split of instances.

    Parameters
    ----------
    fractions : (float, float, float)
        Train, validation and test fractions, summing to 1. Default (0.56, 0.14, 0.30): the paper's
        70/30 train/test split with 20% of train held out for validation.
    seed : int
        Seed of the permutation; the split is a pure function of (instance ids, fractions, seed).
    stratify : bool
        Split each ``subgroup`` separately with the same fractions, so every subtask is represented
        in every part in proportion.
    """

    def __init__(self, fractions: Sequence[float] = (0.56, 0.14, 0.30), seed: int = 0, stratify: bool = False):
        self.fractions = fractions
        self.seed = seed
        self.stratify = stratify

    def _split(self, results: Results) -> dict[str, list[str]]:
        ids = np.asarray(results.instance_ids, dtype=object)
        rng = np.random.default_rng(self.seed)
        who = type(self).__name__
        if not self.stratify:
            idx = _random_parts(ids, split_sizes(len(ids), list(self.fractions), who), rng)
        else:
            groups = results.instances["subgroup"].fillna("<none>").astype(str).to_numpy()
            idx = [[], [], []]
            for g in sorted(set(groups)):  # sorted: the draw order must not depend on row order
                pos = np.flatnonzero(groups == g)
                for part, sel in zip(idx, _random_parts(pos, split_sizes(len(pos), list(self.fractions), who), rng)):
                    part.append(pos[sel])
            idx = [np.sort(np.concatenate(p)) for p in idx]
        return {name: ids[i].tolist() for name, i in zip(("train", "val", "test"), idx)}


class HoldoutGroupsSplit(InstanceSplit):
    """Out-of-distribution split: whole subgroups (subtasks) form the test set.

    Parameters
    ----------
    test_groups : sequence of str
        Subgroup names or glob patterns (e.g. ``["musr_*"]``) whose instances are the test set.
    val_fraction : float
        Fraction of the remaining instances used for validation (the rest train), drawn at random
        unless ``val_groups`` is given.
    val_groups : sequence of str, optional
        Subgroups used as the validation set instead (an OOD validation set).
    seed : int
        Seed of the train/val draw.
    column : str
        Instance column holding the group names (default ``subgroup``).
    """

    def __init__(self, test_groups: Sequence[str], val_fraction: float = 0.2, val_groups: Sequence[str] | None = None,
                 seed: int = 0, column: str = "subgroup"):
        self.test_groups = test_groups
        self.val_fraction = val_fraction
        self.val_groups = val_groups
        self.seed = seed
        self.column = column

    def _split(self, results: Results) -> dict[str, list[str]]:
        who = type(self).__name__
        if self.column not in results.instances.columns:
            raise DataError(f"{results.name}: no instance column {self.column!r} for {who}")
        groups = results.instances[self.column].astype(str).to_numpy()
        names = sorted(set(groups))
        test_g = set(match(names, self.test_groups, who, "test group"))
        val_g = set(match(names, self.val_groups, who, "validation group"))
        if test_g & val_g:
            raise ConfigError(f"{who}: groups both in test and validation: {sorted(test_g & val_g)}")
        ids = np.asarray(results.instance_ids, dtype=object)
        is_test = np.isin(groups, list(test_g))
        if val_g:
            is_val = np.isin(groups, list(val_g))
        else:
            rest = np.flatnonzero(~is_test)
            n_val = int(round(self.val_fraction * len(rest)))
            pick = np.random.default_rng(self.seed).permutation(len(rest))[:n_val]
            is_val = np.zeros(len(ids), bool)
            is_val[rest[pick]] = True
        log.info("%s: test groups %s (%d instances)", who, sorted(test_g), int(is_test.sum()))
        return {"train": ids[~is_test & ~is_val].tolist(), "val": ids[is_val].tolist(), "test": ids[is_test].tolist()}


class PredefinedSplit(InstanceSplit):
    """Use a split column shipped with the data (e.g. KindsOfReasoning's ``Random_split``).

    Parameters
    ----------
    column : str
        Instance column with the part of each instance.
    mapping : mapping of str to str, optional
        Column value -> part (``train``/``val``/``test``). Default maps ``train``, ``validation``/
        ``val``/``valid`` and ``test``. An unmapped value is an error; missing values are left out
        of every part, and counted in the log.
    """

    DEFAULT_MAPPING = {"train": "train", "validation": "val", "val": "val", "valid": "val", "test": "test"}

    def __init__(self, column: str = "Random_split", mapping: Mapping[str, str] | None = None):
        self.column = column
        self.mapping = mapping

    def _split(self, results: Results) -> dict[str, list[str]]:
        who = type(self).__name__
        inst = results.instances
        if self.column not in inst.columns:
            raise DataError(f"{results.name}: no instance column {self.column!r} for {who}; columns with "
                            f"'split' in the name: {[c for c in inst.columns if 'split' in c.lower()]}")
        mapping = dict(self.mapping or self.DEFAULT_MAPPING)
        bad_parts = set(mapping.values()) - {"train", "val", "test"}
        if bad_parts:
            raise ConfigError(f"{who}: mapping targets must be train/val/test, got {sorted(bad_parts)}")
        col = inst[self.column]
        missing = col.isna()
        if missing.any():
            log.warning("%s: %d instances have no value in column %r and are in no part", who, int(missing.sum()),
                        self.column)
        values = col[~missing].astype(str)
        unknown = sorted(set(values) - set(mapping))
        if unknown:
            first = values[~values.isin(list(mapping))].index[0]
            raise DataError(f"{results.name}: column {self.column!r} has value(s) {unknown} not in the mapping "
                            f"{sorted(mapping)} (e.g. instance {first!r})")
        parts = values.map(mapping)
        return {p: parts.index[parts == p].tolist() for p in ("train", "val", "test")}
