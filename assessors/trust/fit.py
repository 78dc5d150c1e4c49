"""Fit the trust model on validation LLMs and log the trust reports of test LLMs.

The training task calls :func:`fit_trust_model` after fitting the generic assessor and stores the
result with the :class:`AssessorModel` (predict/serve then report an expected AUC with a band for
every new LLM); :func:`log_trust_reports` logs the test LLMs' reports.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import pandas as pd

from assessors.trust.expected import TrustModel
from assessors.trust.report import training_profile, trust_report

log = logging.getLogger(__name__)


@dataclass
class LLMPart:
    """A group of LLMs (validation or test) with what their trust is judged on.

    Attributes
    ----------
    llms : list of str
    R : ndarray of shape (n_llms, n_reference)
        Their results on the reference instances.
    X : ndarray of shape (n_instances, d)
        Features of the instances they are scored on.
    S : ndarray of shape (n_llms, n_instances)
        Their successes there (NaN where ungraded).
    """

    llms: list[str]
    R: np.ndarray
    X: np.ndarray
    S: np.ndarray


def reports_for(generic, T: np.ndarray, train_llms: list[str], part: LLMPart, trust_model=None,
                **opts) -> tuple[list, pd.DataFrame]:
    """Trust reports of ``part``'s LLMs against the training LLMs' reference results ``T``
    (n_train_llms, n_reference), and a table of their signals (one row per LLM)."""
    prof = training_profile(T, opts.get("k", 3))
    reps = [trust_report(r, T, train_llms, assessor=generic, trust_model=trust_model, profile=prof, **opts)
            for r in part.R]
    table = pd.DataFrame([{**rep.signals(), "flags": ",".join(rep.flags), "expected_auc": rep.expected_auc,
                           "expected_auc_low": rep.expected_auc_low, "expected_auc_high": rep.expected_auc_high}
                          for rep in reps], index=pd.Index(part.llms, name="llm"))
    return reps, table


def fit_trust_model(generic, T: np.ndarray, train_llms: list[str], val: LLMPart | None, trust_model=None,
                    **opts) -> TrustModel | None:
    """Fit ``trust_model`` (default :class:`TrustModel`) on the validation LLMs' signals against
    their realised AUC; None without validation LLMs or when no AUC is defined."""
    from assessors.metrics import per_llm_auc

    if val is None or not len(val.llms):
        return None
    tm = trust_model if trust_model is not None else TrustModel()
    _, table = reports_for(generic, T, train_llms, val, **opts)
    P = generic.predict_proba(val.X, val.R)
    y = per_llm_auc(val.S, P)
    if not np.isfinite(y).any():
        return None
    return tm.fit(table, y)


def log_trust_reports(run, generic, T: np.ndarray, train_llms: list[str], test: LLMPart, trust_model=None,
                      **opts) -> None:
    """Log the test LLMs' trust reports (table, markdown, out-of-population count) to ``run``."""
    reps, table = reports_for(generic, T, train_llms, test, trust_model=trust_model, **opts)
    run.log_table(table, "trust/test_llms.csv")
    run.log_text("\n\n".join(f"### {m}\n\n{r.to_markdown()}" for m, r in zip(test.llms, reps)), "trust/test_llms.md")
    run.log_metrics({"trust.test_out_of_population": float(sum(r.out_of_population for r in reps))})
    log.info("trust: %d of %d test LLMs out of population", sum(r.out_of_population for r in reps), len(reps))
