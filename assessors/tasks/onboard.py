"""``predict.py mode=onboard``: run a new LLM through an OpenAI-compatible endpoint (conf/onboarding).

With a model (``model_uri``): the model's reference prompts (``onboard.strategy=reference``) or
adaptively chosen prompts of a pool (``adaptive``, latent assessors) -> a reference vector the
model can score with. Without a model: every prompt of ``onboard.prompts`` (``onboard.limit``
first rows per file, ``onboard.ids`` a file of instance ids to keep) -> graded results.
"""
from __future__ import annotations

import hashlib
import json
import logging
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from hydra.utils import instantiate
from omegaconf import DictConfig

from assessors.data.prompt_files import read_prompts, read_reference, write_table
from assessors.errors import ConfigError, DataError, NoPosteriorError
from assessors.data.prompts import read_prompt_files as read_prompt_table
from assessors.routing.engine import load_assessor_model, registry_for
from assessors.routing.setup import trust_hook
from assessors.tasks.config import built, plain
from assessors.tasks.predict_common import report, tracking_uri_from_cfg

log = logging.getLogger("assessors.predict")


def run(cfg: DictConfig, model=None) -> dict:
    """Onboard ``onboarding.model``: on the model's reference prompts, adaptively, or on every prompt."""
    ob = cfg.onboard
    if model is None and not cfg.get("model_uri"):
        if not ob.prompts:
            raise ConfigError("mode=onboard without a model (model_uri) needs onboard.prompts=[files with the prompts "
                              "and targets]")
        return report(onboard_prompts(cfg), cfg)
    model = model if model is not None else load_assessor_model(cfg.model_uri, tracking_uri_from_cfg(cfg))
    strategy = ob.get("strategy", "reference")
    if strategy not in ("auto", "adaptive", "reference"):
        raise ConfigError(f"onboard.strategy must be auto, adaptive or reference, got {strategy!r}")
    try:  # the assessor says whether it can onboard adaptively (auto falls back to the reference set)
        model.assessor.require_posterior(f"onboard.strategy=adaptive with {model_uri_name(cfg)} "
                                         "(or use onboard.strategy=reference)")
        adaptive_ok = True
    except NoPosteriorError:
        if strategy == "adaptive":
            raise
        adaptive_ok = False
    if strategy == "adaptive" or (strategy == "auto" and adaptive_ok):
        return report(onboard_adaptive(cfg, model), cfg)
    return report(onboard_reference(cfg, model), cfg)


def onboard_prompts(cfg: DictConfig) -> dict:
    """No model: every prompt of ``onboard.prompts`` (``onboard.limit`` per file, ``onboard.ids``) -> ``out_dir``."""
    ob = cfg.onboard
    ids = set(Path(ob.ids).read_text().split()) if ob.get("ids") else None
    prompts = read_prompt_table(list(ob.prompts), limit=ob.get("limit"), ids=ids)
    _, summary = instantiate(cfg.onboarding).run(prompts, ob.out_dir)
    return summary


#: The trust report's ``target.source`` when ``onboard.target`` names the prompts it is about.
TARGET_FILES = "onboard.target"
#: What the errors say when no prompt files are named and the model's training prompts cannot be read.
NAME_FILES = "pass onboard.prompts=[files with the prompts and targets]"


def read_onboard_prompts(cfg: DictConfig, model, ids=None) -> tuple[pd.DataFrame, list[str], str]:
    """``(prompts, files, source)``: the prompts of ``onboard.prompts`` when given (they win), else the
    model's training prompts read from the data dir (``paths.data_dir``, ``ASSESSORS_DATA_DIR``; see
    :mod:`assessors.data.training_prompts`). ``ids`` keeps those instance ids (default: all of the
    files, or the training ids).

    Raises
    ------
    ConfigError
        No files named and the model records no training prompts (or its data has none to grade by:
        :func:`~assessors.data.training_prompts.no_pool_reason` says why).
    DataError
        A training prompt file is missing (the message names ``ASSESSORS_DATA_DIR`` and ``onboard.prompts``).
    """
    from assessors.data.training_prompts import no_pool_reason, read_training_prompts

    ob = cfg.onboard
    if ob.prompts:
        files = [str(p) for p in ob.prompts]
        return read_prompt_table(files, ids=None if ids is None else set(ids)), files, "onboard.prompts"
    record = getattr(model, "training_prompts", None)
    why = no_pool_reason(record)
    if why:
        raise ConfigError(f"mode=onboard needs onboard.prompts=[files with the prompts and targets]: "
                          f"{model_uri_name(cfg)} records no training prompts to use instead ({why})")
    paths = cfg.get("paths") or {}
    prompts, files = read_training_prompts(record, paths.get("data_dir"), paths.get("cache_dir"), ids=ids,
                                           instead=NAME_FILES)
    return prompts, files, f"the model's training prompts ({record.get('data')})"


def onboard_reference(cfg: DictConfig, model) -> dict:
    """Run the new LLM on the model's reference prompts -> ``<out>/reference.csv``."""
    ob = cfg.onboard
    ref_ids = list(model.reference_ids)
    prompts, files, source = read_onboard_prompts(cfg, model, ids=ref_ids)
    missing = sorted(set(ref_ids) - set(prompts["instance_id"]))
    if missing:
        log.warning("%d of %d reference prompts are not in %s (e.g. %s); they stay unanswered",
                    len(missing), len(ref_ids), files, missing[:3])
    if prompts.empty:
        raise DataError(f"none of the {len(ref_ids)} reference ids occur in {files}")
    log.info("reference prompts from %s: %d of %d", source, len(prompts), len(ref_ids))
    out_dir = Path(ob.out_dir)
    results, summary = instantiate(cfg.onboarding).run(prompts, out_dir)
    name = results.llms[0]
    ref = pd.DataFrame({"reference_id": results.instance_ids, "success": results.success[0]})
    path = write_table(ref, out_dir / "reference.csv")
    # registering validates the vector against the model and computes the trust report (when configured)
    reg = registry_for(model, trust_hook(model, built(cfg.get("trust"))))
    entry = reg.register(name, read_reference(path), source=str(path))
    if entry.trust is not None:
        log_onboarding_trust(cfg, name, entry.trust)
    return {"llm": name, "reference": str(path), **entry.summary(), "onboarding": summary}


def model_uri_name(cfg: DictConfig) -> str:
    return str(cfg.get("model_uri") or "the model")


def onboard_adaptive(cfg: DictConfig, model) -> dict:
    """Ask the new LLM adaptively chosen prompts of the pool (``onboard.prompts``, else the model's training
    prompts) -> ``<out>/answers.csv``."""
    from assessors.onboarding.adaptive_run import AdaptiveOnboarding

    ob = cfg.onboard
    pool, files, source = read_onboard_prompts(cfg, model)
    if pool.empty:
        raise DataError(f"the candidate pool {files} holds no prompts")
    log.info("candidate pool: %s, %d prompts from %d file(s)", source, len(pool), len(files))
    X_target = None
    if ob.get("target"):
        X_target = model.featurizer.transform(read_prompts(ob.target)["prompt"].tolist())
    # the assessor's identity: its reference ids and item network (a retrained model is another assessor)
    a, b = model.assessor.item_parameters(model.assessor.reference_features_[:16])
    ident = hashlib.sha256(json.dumps(list(model.reference_ids)).encode()
                           + np.round(a, 4).tobytes() + np.round(b, 4).tobytes()).hexdigest()[:16]
    runner = AdaptiveOnboarding(instantiate(cfg.onboarding), instantiate(cfg.adaptive), model.assessor,
                                model.featurizer, assessor_id=ident)
    summary = {"strategy": "adaptive", **runner.run(pool, Path(ob.out_dir), X_target=X_target, pool_files=files,
                                                    # the training ids are a part of their files
                                                    record_pool_ids=not ob.prompts)}
    summary["pool"] = {"source": source, "n_prompts": int(len(pool)), "files": files}
    # what predict.py mode=score|route takes to score this LLM: llms=[{name, onboarded: <out_dir>}]
    summary["llm_spec"] = {"name": summary["llm"], "onboarded": str(Path(ob.out_dir).resolve())}
    rep = adaptive_trust(cfg, model, runner, summary["llm"])
    if rep is not None:
        summary["trust"] = rep
        summary["predictor"] = rep["fallback"]["predictor"]
    return summary


def adaptive_trust(cfg: DictConfig, model, runner, llm: str) -> dict | None:
    """The posterior trust report (v2) of an adaptively onboarded LLM from ``runner``'s asked prompts and
    answers, about its target prompts (``target`` says which: ``onboard.target`` or the pool); printed
    (stderr) and logged. None when ``trust`` is off or custom.

    The thresholds and fallback are those stored with the model (chosen on validation LLMs by
    ``train.py``) unless ``trust.posterior`` sets them, else the stated defaults; ``policy.source``
    in the report says which.
    """
    trust = plain(cfg.get("trust")) or {}
    if not trust.get("enabled", True) or "_target_" in trust:
        return None
    from assessors.trust.posterior_policy import PosteriorTrustPolicy, policy_options
    from assessors.trust.target import POOL_TARGET

    sel = runner.selector_
    opts = policy_options(model, {"seed": int(cfg.seed), **(trust.get("posterior") or {})})
    policy = PosteriorTrustPolicy(fallback=trust.get("fallback", True), **opts)
    rep, _ = policy.assess(model.assessor, sel.X_pool_[runner.asked_], runner.answers_, sel.X_target_, llm=llm)
    # what the expected accuracy and AUC are about: the prompts of onboard.target, else the candidate pool
    rep["target"] = {"source": TARGET_FILES if (cfg.get("onboard") or {}).get("target") else POOL_TARGET,
                     "n_prompts": int(len(sel.X_target_))}
    print(f"trust report for {llm}: {rep['message']} (predictions: {rep['fallback']['predictor']}; "
          f"thresholds: {policy.source})", file=sys.stderr)
    log_onboarding_trust(cfg, llm, rep)
    return rep


def log_onboarding_trust(cfg: DictConfig, llm: str, report: dict) -> None:
    """Log an onboarded LLM's trust report to the configured tracker (``tracking=none`` turns it off):
    ``trust/report_v2.json``, ``trust.*`` verdict tags and numeric metrics."""
    from assessors.tasks.config import tracker_from_cfg
    from assessors.trust.posterior_report import OUT

    fb = report.get("fallback") or {}
    metrics = {k: report.get(k) for k in ("expected_accuracy", "expected_auc", "misfit_pvalue", "mahalanobis",
                                          "n_answered", "more_questions", "similarity_pvalue")}
    bands = {"accuracy": report.get("accuracy_band"), "auc": report.get("auc_band"), "served_auc": fb.get("auc_band"),
             "served_accuracy": fb.get("accuracy_band")}
    metrics.update({f"{k}_{end}": (b or [None, None])[i] for k, b in bands.items() for i, end in enumerate(("low", "high"))})
    metrics.update(served_expected_accuracy=fb.get("expected_accuracy"), out_of_population=float(report.get("verdict") == OUT),
                   fallback_applied=float(bool(fb.get("applied"))))
    with tracker_from_cfg(cfg).start_run(f"onboard {llm}", tags={"mode": "onboard", "llm": llm}) as run:
        run.set_tags({"trust.verdict": str(report.get("verdict")), "trust.message": str(report.get("message")),
                      "trust.predictor": str(fb.get("predictor", "latent")), "trust.llm": str(report.get("llm"))})
        run.log_metrics({f"trust.{k}": float(v) for k, v in metrics.items() if v is not None and np.isfinite(v)})
        run.log_dict(report, "trust/report_v2.json")
