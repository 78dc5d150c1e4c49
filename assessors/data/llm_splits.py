"""LLM splits: random, explicit lists, by family (name prefix) and by frontier (accuracy rank)."""
from __future__ import annotations

import logging
from typing import Sequence

import numpy as np

from assessors.data.results import Results
from assessors.data.split_base import LLMSplit, match, split_sizes
from assessors.errors import ConfigError

log = logging.getLogger("assessors.data")


class RandomLLMSplit(LLMSplit):
    """Random train/val/test split of LLMs.

    Give counts (``n_train``, ``n_val``, ``n_test``) or ``fractions``. With counts, a missing
    ``n_train`` means "all the others"; if all three are given and sum to less than the number of
    LLMs, the rest are left out (and logged). The default, fractions (50, 10, 18)/78, is the
    paper's 50/10/18 split on 78 LLMs and scales to other sizes.

    Parameters
    ----------
    n_train, n_val, n_test : int, optional
    fractions : (float, float, float), optional
    seed : int
    """

    def __init__(self, n_train: int | None = None, n_val: int | None = None, n_test: int | None = None,
                 fractions: Sequence[float] | None = None, seed: int = 0):
        self.n_train = n_train
        self.n_val = n_val
        self.n_test = n_test
        self.fractions = fractions
        self.seed = seed

    def _sizes(self, n: int) -> tuple[int, int, int]:
        who = type(self).__name__
        counts = (self.n_train, self.n_val, self.n_test)
        if self.fractions is not None and any(c is not None for c in counts):
            raise ConfigError(f"{who}: give either counts or fractions, not both")
        if all(c is None for c in counts):
            return split_sizes(n, list(self.fractions or (50 / 78, 10 / 78, 18 / 78)), who)
        if self.n_val is None or self.n_test is None:
            raise ConfigError(f"{who}: n_val and n_test are required when giving counts")
        n_train = n - self.n_val - self.n_test if self.n_train is None else self.n_train
        if min(n_train, self.n_val, self.n_test) < 0 or n_train + self.n_val + self.n_test > n:
            raise ConfigError(f"{who}: counts train={n_train}, val={self.n_val}, test={self.n_test} do not fit "
                              f"{n} LLMs")
        return n_train, self.n_val, self.n_test

    def _split(self, results: Results) -> dict[str, list[str]]:
        llms = np.asarray(results.llms, dtype=object)
        n_train, n_val, n_test = self._sizes(len(llms))
        perm = np.random.default_rng(self.seed).permutation(len(llms))
        parts = (perm[:n_train], perm[n_train:n_train + n_val], perm[n_train + n_val:n_train + n_val + n_test])
        return {name: llms[np.sort(p)].tolist() for name, p in zip(("train", "val", "test"), parts)}


class ExplicitLLMSplit(LLMSplit):
    """LLMs listed by name or glob pattern (``gpt-4-*``).

    ``train=None`` means "every LLM not in val or test". A pattern matching no LLM is an error, and
    so is an LLM named in two parts.
    """

    def __init__(self, train: Sequence[str] | None = None, val: Sequence[str] = (), test: Sequence[str] = ()):
        self.train = train
        self.val = val
        self.test = test

    def _split(self, results: Results) -> dict[str, list[str]]:
        who = type(self).__name__
        val = match(results.llms, list(self.val), who, "val LLM")
        test = match(results.llms, list(self.test), who, "test LLM")
        if self.train is None:
            taken = set(val) | set(test)
            train = [m for m in results.llms if m not in taken]
        else:
            train = match(results.llms, list(self.train), who, "train LLM")
        return {"train": train, "val": val, "test": test}


class FamilyLLMSplit(LLMSplit):
    """Split by model family: each part is the LLMs whose name starts with one of its prefixes.

    ``train_prefixes=None`` means "every LLM matched by no val/test prefix". An LLM matching
    prefixes of two parts is an error; LLMs matching no prefix are left out (and logged).
    """

    def __init__(self, train_prefixes: Sequence[str] | None = None, val_prefixes: Sequence[str] = (),
                 test_prefixes: Sequence[str] = ()):
        self.train_prefixes = train_prefixes
        self.val_prefixes = val_prefixes
        self.test_prefixes = test_prefixes

    def _split(self, results: Results) -> dict[str, list[str]]:
        who = type(self).__name__
        pats = {"val": self.val_prefixes, "test": self.test_prefixes}
        if self.train_prefixes is not None:
            pats["train"] = self.train_prefixes
        out = {}
        for part, prefixes in pats.items():
            prefixes = [prefixes] if isinstance(prefixes, str) else list(prefixes)
            for p in prefixes:
                if not any(m.startswith(p) for m in results.llms):
                    raise ConfigError(f"{who}: {part} prefix {p!r} matches no LLM; available: {sorted(results.llms)[:40]}")
            out[part] = [m for m in results.llms if any(m.startswith(p) for p in prefixes)]
        if self.train_prefixes is None:
            taken = set(out["val"]) | set(out["test"])
            out["train"] = [m for m in results.llms if m not in taken]
        return out


class FrontierLLMSplit(LLMSplit):
    """Frontier split: the most accurate LLMs are the test set, the next ones validation.

    Accuracy is the mean success over evaluated cells; ties are broken by name so the split is
    deterministic. Trains on weaker LLMs and tests whether assessors extrapolate to stronger ones.

    Parameters
    ----------
    n_test : int
        Number of top-accuracy LLMs in test.
    n_val : int
        Number of next-best LLMs in validation.
    n_train : int, optional
        Number of LLMs in train, taken just below validation; default all the rest.
    """

    def __init__(self, n_test: int = 18, n_val: int = 10, n_train: int | None = None):
        self.n_test = n_test
        self.n_val = n_val
        self.n_train = n_train

    def _split(self, results: Results) -> dict[str, list[str]]:
        acc = results.accuracy()
        ranked = sorted(acc.index, key=lambda m: (-acc[m], m))
        n = len(ranked)
        n_train = n - self.n_test - self.n_val if self.n_train is None else self.n_train
        if min(self.n_test, self.n_val, n_train) < 1 or self.n_test + self.n_val + n_train > n:
            raise ConfigError(f"{type(self).__name__}: n_test={self.n_test}, n_val={self.n_val}, n_train={n_train} "
                              f"do not fit {n} LLMs")
        test = ranked[:self.n_test]
        val = ranked[self.n_test:self.n_test + self.n_val]
        train = ranked[self.n_test + self.n_val:self.n_test + self.n_val + n_train]
        log.info("FrontierLLMSplit: test accuracy >= %.3f, train accuracy <= %.3f", acc[test[-1]], acc[train[0]])
        return {"train": train, "val": val, "test": test}
