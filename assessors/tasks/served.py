"""What ``predict.py`` and the server would serve each test LLM of a training run.

The trained model (:class:`~assessors.core.pyfunc.AssessorModel`, as logged) goes into the serving
engine; every test LLM is registered by its reference results, as ``predict.py mode=score`` registers
a new LLM, with the trust hook of :func:`~assessors.routing.setup.trust_hook` about the test prompts
(``trust.about: prompts``); the engine then scores the test prompts with the predictor each LLM's trust
verdict leaves it (the assessor, or a fallback). One code path: the served predictions are the engine's.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Mapping

import numpy as np
import pandas as pd

from assessors.metrics import evaluate
from assessors.routing.engine import Engine, registry_for
from assessors.routing.setup import trust_hook
from assessors.trust.target import PROMPTS_TARGET


@dataclass
class Served:
    """The served predictions of the test LLMs and what decided them.

    Attributes
    ----------
    P : ndarray of shape (n_test_llms, n_test)
        P(success) as served.
    predictor : dict of str to str
        Per LLM, ``assessor`` or the name of the fallback its trust verdict switched it to.
    trust : dict of str to dict
        Per LLM, its trust report (None without a trust hook).
    """

    P: np.ndarray
    predictor: dict[str, str]
    trust: dict[str, dict | None]


def serving_model(assessor, featurizer, reference_ids, reference_success, llms, fitted: Mapping):
    """The :class:`~assessors.core.pyfunc.AssessorModel` ``train.py`` logs, in memory (without the known
    LLMs' posterior and the training prompts' record: a new LLM's predictions do not read them)."""
    from assessors.core.pyfunc import AssessorModel

    return AssessorModel(assessor, featurizer, reference_ids, reference_success, llms,
                         trust_model=fitted.get("trust_model"), trust_policy=fitted.get("trust_policy"),
                         prompt_ood=fitted.get("prompt_ood"))


def serve_llms(model, X: np.ndarray, R: np.ndarray, llms: list[str], trust: Mapping | None,
               max_target: int | None = None) -> Served:
    """Register ``llms`` by their reference results ``R`` (n_llms, n_ref) on an engine over ``model`` and
    score the prompts ``X`` (n, d) as served.

    ``trust`` is ``predict.py``'s ``trust`` node (``{enabled, fallback, posterior, about, ...}``, see
    :func:`~assessors.routing.setup.trust_hook`); with ``about: prompts`` a report that has a target is
    about ``X`` (at most ``max_target`` of them, the seeded subsample ``predict.py`` takes).
    """
    trust = dict(trust or {})
    about = trust.pop("about", PROMPTS_TARGET)
    # the engine drops the featurizer's disk cache for its own: a copy keeps the trained one as logged
    model = copy.copy(model)
    model.featurizer = copy.copy(model.featurizer)
    fn = trust_hook(model, trust)
    retarget = getattr(fn, "with_target", None)
    if retarget is not None and about == PROMPTS_TARGET:
        fn = retarget(target=X, target_source=PROMPTS_TARGET, max_target=max_target)
    engine = Engine(model, registry_for(model, fn))
    for llm, r in zip(llms, R):
        engine.registry.register(llm, r, overwrite=True)
    entries = engine.resolve(list(llms))
    P = np.asarray(engine.score(np.asarray(X, dtype=np.float32), entries), dtype=np.float32)
    return Served(P, {e.name: e.predictor_name for e in entries}, {e.name: e.trust for e in entries})


def accuracy_band(report: dict | None) -> tuple[float | None, list | None]:
    """``(expected accuracy, [low, high])`` of the served predictor from a trust report (the fallback's
    when one is applied); ``(None, None)`` for a report without them."""
    if not report:
        return None, None
    fb = report.get("fallback") or {}
    return fb.get("expected_accuracy", report.get("expected_accuracy")), fb.get("accuracy_band",
                                                                                report.get("accuracy_band"))


def band_holds(report: dict | None, s: np.ndarray) -> tuple[float, bool | None]:
    """The accuracy of successes ``s`` (n,; NaN where ungraded) and whether the served accuracy band of
    ``report`` (:func:`accuracy_band`) holds it (None without a band)."""
    _, band = accuracy_band(report)
    keep = ~np.isnan(s)
    acc = float(s[keep].mean()) if keep.any() else np.nan
    return acc, None if not band or None in band else bool(band[0] <= acc <= band[1])


def verdict(report: dict | None) -> str:
    """A trust report's verdict (the posterior report's, else in or out of population; ``n/a`` without one)."""
    if not report:
        return "n/a"
    if report.get("verdict"):
        return str(report["verdict"])
    return "out of population" if report.get("out_of_population") else "in population"


def served_table(served: Served, raw: np.ndarray, S: np.ndarray, llms: list[str]) -> pd.DataFrame:
    """One row per test LLM: verdict, predictor served, AUC and ECE served and raw, the accuracy on the
    test prompts and the served accuracy band (and whether it holds the accuracy).

    Parameters
    ----------
    served : Served
    raw : ndarray of shape (n_test_llms, n_test)
        The model's own predictions (no trust verdict).
    S : ndarray of shape (n_test_llms, n_test)
        Test successes (NaN where ungraded).
    llms : list of str
    """
    rows = []
    for k, llm in enumerate(llms):
        keep = ~np.isnan(S[k])
        s, r = evaluate(S[k][keep], served.P[k][keep]), evaluate(S[k][keep], raw[k][keep])
        rep = served.trust.get(llm) or {}
        expected, band = accuracy_band(rep)
        acc, inside = band_holds(rep, S[k])
        rows.append({"llm": llm, "verdict": verdict(rep), "served": served.predictor[llm],
                     "auc_served": s["auc"], "auc_raw": r["auc"], "ece_served": s["ece"], "ece_raw": r["ece"],
                     "accuracy": acc, "expected_accuracy": expected,
                     "band_low": band[0] if band else None, "band_high": band[1] if band else None,
                     "in_band": inside})
    return pd.DataFrame(rows).set_index("llm")
