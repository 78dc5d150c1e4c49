"""What the training tasks share: load, validate, split and featurize once; fit the generic assessor.

``prepare(cfg)`` is steps 1-4 of ``train.py``'s pipeline (loader -> validate -> split -> features);
``fit_generic(cfg, prep)`` selects the reference set and fits the configured assessor on it, with
the validation LLMs when the split has them (the train task, grid jobs and the trust evaluation
all fit it this way).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from assessors.data.results import Results
from assessors.errors import ConfigError
from assessors.features.parts import featurize_parts
from assessors.tasks.config import plain
from assessors.tasks.timing import stage
from assessors.threads import budgeted, fit_threads

log = logging.getLogger(__name__)


@dataclass
class Prepared:
    """Everything the assessors are fitted on, computed once per run."""

    results: Results
    inst: dict[str, list[str]]  # train/val/test instance ids
    llms: dict[str, list[str]]  # train/val/test LLM names
    X: dict[str, np.ndarray]  # train/val/test features, (n_ids, d)
    featurizer: object
    timings: dict[str, float] = field(default_factory=dict)

    def S(self, llm_part: str, inst_part: str) -> np.ndarray:
        """Success sub-matrix (n_llms, n_instances)."""
        return self.results.matrix(self.llms[llm_part], self.inst[inst_part])

    def validation(self, ref_ids: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """``(X_val, S_val, R_val)`` of the validation LLMs (None without any): what assessors
        and selectors judge their choices on. ``ref_ids`` are the reference instances of ``R_val``."""
        if not self.llms["val"]:
            return None
        return self.X["val"], self.S("val", "val"), self.results.matrix(self.llms["val"], ref_ids)


def prepare(cfg: DictConfig, results: Results | None = None) -> Prepared:
    """Load, validate, split and featurize (steps 1-4 of the pipeline); ``results``: ``cfg.data``
    already loaded (the cells of a sweep on the same data), else it is loaded here."""
    t = {}
    with stage(t, "load_s"):
        results = instantiate(cfg.data) if results is None else results
    log.info("loaded %r", results)
    if cfg.get("validate") is not None:
        from assessors.data.exclusion import exclude_flagged
        from assessors.data.validate import run_validation

        # before splitting: degenerate data fails here, not after minutes of fitting; flagged
        # blocks (grading failures, too few cells, no prompt text) are left out unless configured
        needs_text = instantiate(cfg.features).reads == "prompts"  # __init__ only stores params
        options = plain(cfg.validate)
        report = run_validation(results, options, needs_text=needs_text)
        results = exclude_flagged(results, report, options)
    inst = held_out_for_trust(instantiate(cfg.split).split(results),
                              float(OmegaConf.select(cfg, "trust.holdout_prompts", default=0.0) or 0.0), int(cfg.seed))
    llms = instantiate(cfg.llm_split).split(results)
    log.info("instances %s; LLMs %s", {k: len(v) for k, v in inst.items()}, {k: len(v) for k, v in llms.items()})
    with stage(t, "features_s"):
        featurizer, X = featurize(cfg, results, inst, llms["train"])
    return Prepared(results, inst, llms, X, featurizer, t)


def held_out_for_trust(inst: dict[str, list[str]], share: float, seed: int) -> dict[str, list[str]]:
    """Move a seeded random ``share`` of the validation instances to a part of their own, ``trust``.

    The assessor early-stops and recalibrates on the validation prompts; the posterior trust policy
    (``train.py``'s :func:`~assessors.tasks.train_trust.fit_trust_policy`) is then chosen on the ``trust``
    prompts, which the fit never looked at. 0: no such part (the policy is chosen on the validation
    prompts too).
    """
    if not share:
        return inst
    if not 0 < share < 1:
        raise ConfigError(f"trust.holdout_prompts must be in [0, 1), got {share}")
    val = list(inst.get("val") or [])
    n = int(round(share * len(val)))
    if n < 1 or n >= len(val):
        raise ConfigError(f"trust.holdout_prompts={share} leaves {len(val) - n} of {len(val)} validation prompts "
                          f"for the fit and {n} for the trust policy; both need at least one")
    keep = np.zeros(len(val), dtype=bool)
    keep[np.random.default_rng(seed).choice(len(val), n, replace=False)] = True
    return {**inst, "val": [v for v, k in zip(val, keep) if not k], "trust": [v for v, k in zip(val, keep) if k]}


def featurize(cfg, results: Results, inst: dict, train_llms: list[str]):
    """Fit the configured featurizer on training data and transform every split."""
    featurizer = instantiate(budgeted(cfg.features, fit_threads(threads=cfg.get("threads"))))
    return featurizer, featurize_parts(featurizer, results, inst, "train", train_llms)


def fit_assessor(cfg, prep: Prepared, ref_idx: np.ndarray, ref_ids: list[str], assessor_cfg=None):
    """Fit the configured assessor (``cfg.assessor`` or ``assessor_cfg``) on the training LLMs with
    reference positions ``ref_idx`` (ids ``ref_ids``), validated on the validation LLMs if any."""
    node = assessor_cfg if assessor_cfg is not None else cfg.assessor
    assessor = instantiate(budgeted(node, fit_threads(threads=cfg.get("threads"))))
    assessor.fit(prep.X["train"], prep.S("train", "train"), ref_idx, validation=prep.validation(ref_ids))
    return assessor


def fit_selector(selector, prep: Prepared):
    """Fit a reference-set selector on the training LLMs x training instances, with the validation
    LLMs' results on the candidates (None without validation LLMs; most selectors ignore them)."""
    return selector.fit(prep.S("train", "train"), prep.inst["train"], prep.X["train"],
                        validation=prep.validation(prep.inst["train"]))


def fit_generic(cfg, prep: Prepared, selector=None, assessor_cfg=None):
    """Select the reference set (with ``selector``, unfitted, or the configured one) and fit the
    generic assessor; returns (assessor, ref ids)."""
    selector = fit_selector(selector if selector is not None else instantiate(cfg.selector), prep)
    ref_ids = selector.reference_ids_
    assessor = fit_assessor(cfg, prep, np.asarray(selector.reference_index_), ref_ids, assessor_cfg)
    return assessor, ref_ids
