"""Pipeline hook: fit the trust model on validation LLMs and log the test LLMs' trust reports.

``train_assessors`` calls, after ``predict_methods``::

    trust_model = fit_trust(cfg, prep, fitted["generic"], fitted["reference_ids"], run)

and stores ``trust_model`` with the :class:`AssessorModel` (predict/serve then report an
expected AUC with a band for every new LLM).
"""
from __future__ import annotations

import logging

import numpy as np
import pandas as pd

from assessors.trust.expected import TrustModel
from assessors.trust.report import training_profile, trust_report

log = logging.getLogger(__name__)


def reports_for(prep, generic, ref_ids, part: str, trust_model=None, **opts) -> tuple[list, pd.DataFrame]:
    """Trust reports of the ``part`` LLMs (train/val/test) and a table of their signals."""
    res = prep.results
    T = res.matrix(prep.llms["train"], ref_ids)
    prof = training_profile(T, opts.get("k", 3))
    reps = [trust_report(r, T, prep.llms["train"], assessor=generic, trust_model=trust_model, profile=prof, **opts)
            for r in res.matrix(prep.llms[part], ref_ids)]
    table = pd.DataFrame([{**rep.signals(), "flags": ",".join(rep.flags), "expected_auc": rep.expected_auc,
                           "expected_auc_low": rep.expected_auc_low, "expected_auc_high": rep.expected_auc_high}
                          for rep in reps], index=pd.Index(prep.llms[part], name="llm"))
    return reps, table


def fit_trust(cfg, prep, generic, ref_ids, run=None) -> TrustModel | None:
    """Fit a :class:`TrustModel` on validation LLMs; log test-LLM reports to ``run``.

    ``cfg.trust.trust_model`` (optional) configures the model, ``cfg.trust.report`` the report
    options. Returns None when there are no validation LLMs.
    """
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    from assessors.metrics import per_llm_auc

    tcfg = cfg.get("trust") or {}
    opts = OmegaConf.to_container(tcfg["report"], resolve=True) if "report" in tcfg else {}
    tm = instantiate(tcfg["trust_model"]) if "trust_model" in tcfg else TrustModel()
    if prep.llms.get("val"):
        _, val = reports_for(prep, generic, ref_ids, "val", **opts)
        S = prep.S("val", "val")
        P = generic.predict_proba(prep.X["val"], prep.results.matrix(prep.llms["val"], ref_ids))
        y = per_llm_auc(S, P)
        if np.isfinite(y).any():
            tm.fit(val, y)
        else:
            tm = None
    else:
        tm = None
    if run is not None and prep.llms.get("test"):
        reps, test = reports_for(prep, generic, ref_ids, "test", trust_model=tm, **opts)
        run.log_table(test, "trust/test_llms.csv")
        run.log_text("\n\n".join(f"### {m}\n\n{r.to_markdown()}" for m, r in zip(prep.llms["test"], reps)),
                     "trust/test_llms.md")
        run.log_metrics({"trust.test_out_of_population": float(sum(r.out_of_population for r in reps))})
        log.info("trust: %d of %d test LLMs out of population", sum(r.out_of_population for r in reps), len(reps))
    return tm
