"""What the ``predict.py`` modes share: the engine from the config, calibration, the JSON summary."""
from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import numpy as np
from hydra.utils import instantiate
from omegaconf import DictConfig

from assessors.errors import ConfigError
from assessors.routing.engine import Engine
from assessors.routing.setup import build_engine
from assessors.tasks.config import built, plain

log = logging.getLogger("assessors.predict")


def tracking_uri_from_cfg(cfg: DictConfig) -> str | None:
    """The MLflow store of ``cfg.tracking`` (the same absolute URI train.py logs to), or None."""
    from assessors.tasks.config import tracker_from_cfg
    from assessors.tracking import MlflowTracker

    tracker = tracker_from_cfg(cfg) if cfg.get("tracking") is not None else None
    return tracker.uri if isinstance(tracker, MlflowTracker) else None


def engine_from_cfg(cfg: DictConfig, model=None, precision: str | None = None) -> Engine:
    """The engine of ``cfg.model_uri`` (or ``model``) with the configured router, LLMs and trust options;
    ``precision``: the encoder's, if not the trained featurizer's."""
    return build_engine(cfg.model_uri, built(cfg.get("router")), plain(cfg.get("llms") or []),
                        plain(cfg.get("known_llms")), plain(cfg.get("default_cost")), built(cfg.get("trust")),
                        cfg.server.embed_cache_size, model=model,
                        tracking_uri=tracking_uri_from_cfg(cfg), precision=precision)


def report(out: dict, cfg: DictConfig | None = None) -> dict:
    """Print a mode's summary as JSON on stdout (what scripts parse) and a few lines on stderr; return it.

    Per-LLM trust reports (``out["trust"]``) go to a file in the run folder (:func:`save_trust_reports`)
    and stdout names it with the count of each verdict, unless ``show_trust=true`` asks for them there.
    The returned dict keeps them.
    """
    shown = dict(out)
    trust = out.get("trust")
    per_llm = isinstance(trust, dict) and trust and all(
        isinstance(r, dict) and ("verdict" in r or "out_of_population" in r) for r in trust.values())
    if per_llm and not (cfg is not None and cfg.get("show_trust", False)):
        shown["trust"] = {"verdicts": verdict_counts(trust), "reports": str(save_trust_reports(trust, cfg))}
    print(json.dumps(shown, indent=2, default=str), file=sys.stdout)
    print(summary_lines(shown), file=sys.stderr)
    return out


def verdict_counts(reports: dict[str, dict]) -> dict[str, int]:
    """How many LLMs got each trust verdict (the posterior report's, else in/out of population)."""
    from collections import Counter

    from assessors.tasks.served import verdict

    return dict(Counter(verdict(r) for r in reports.values() if isinstance(r, dict)))


def save_trust_reports(reports: dict[str, dict], cfg: DictConfig | None = None) -> Path:
    """Write the per-LLM trust reports to ``trust_reports.json`` in the run folder (else under
    ``paths.outputs/predict``); returns its path."""
    from assessors.io import atomic_write
    from assessors.tasks.wrapper import run_folder

    folder = run_folder() or Path((cfg.get("paths") or {}).get("outputs", "outputs") if cfg is not None
                                  else "outputs") / "predict"
    text = json.dumps(reports, indent=1, default=str)
    path = atomic_write(Path(folder).resolve() / "trust_reports.json", lambda tmp: Path(tmp).write_text(text))
    log.info("trust reports of %d LLMs written to %s", len(reports), path)
    return path


def summary_lines(out: dict) -> str:
    """The stderr summary of a mode: what was done, where the results and the trust reports are."""
    lines = []
    if "n_prompts" in out:
        llms = f" x {len(out['llms'])} LLMs" if isinstance(out.get("llms"), list) else ""
        lines.append(f"{out['n_prompts']} prompts{llms}" + (f" -> {out['out']}" if out.get("out") else ""))
    if isinstance(out.get("chosen"), dict):
        lines.append("chosen: " + ", ".join(f"{k} {v}" for k, v in list(out["chosen"].items())[:10]))
    trust = out.get("trust")
    if isinstance(trust, dict) and "verdicts" in trust:
        lines.append("trust verdicts: " + ", ".join(f"{n} {v}" for v, n in trust["verdicts"].items())
                     + f"; reports: {trust['reports']} (show_trust=true prints them)")
    return "\n".join(lines)


def trust_reports(engine: Engine) -> dict[str, dict]:
    """Trust reports of the registered LLMs that have one (:func:`report` writes them to a file)."""
    return {e.name: e.trust for e in engine.registry.resolve(None) if e.trust is not None}


def trust_about_prompts(cfg: DictConfig, engine: Engine, prompts) -> dict | None:
    """Make the prompts a mode scores or routes the target of the posterior trust report and re-report the
    registered LLMs about them (expected accuracy and AUC, the prompt-side signal, the fallback the
    verdict picks); their ``target``, or None (``trust.about: reference``, or a report without a target:
    off, custom, or a non-latent assessor's). At most ``server.onboarding.trust_target_max`` of them
    (a seeded random subsample) enter the report."""
    from omegaconf import OmegaConf

    from assessors.trust.target import PROMPTS_TARGET, subsample

    trust_fn = engine.registry.trust_fn
    retarget = getattr(trust_fn, "with_target", None)
    about = (plain(cfg.get("trust")) or {}).get("about", PROMPTS_TARGET)
    if about not in (PROMPTS_TARGET, "reference"):
        raise ConfigError(f"trust.about must be '{PROMPTS_TARGET}' or 'reference', got {about!r}")
    if retarget is None or about != PROMPTS_TARGET:
        return None
    texts = list(prompts)
    # cut before featurizing: only the prompts the report reads are embedded here (the mode embeds all of
    # them once more to score them, from the engine's cache when they fit in it)
    keep = subsample(len(texts), OmegaConf.select(cfg, "server.onboarding.trust_target_max", default=None),
                     trust_fn.policy.report_options.get("seed", 0))
    chosen = texts if keep is None else [texts[i] for i in keep]
    fn = retarget(target=engine.embed(chosen), target_source=PROMPTS_TARGET, n_available=len(texts))
    n = engine.registry.set_trust_fn(fn)
    log.info("trust reports of %d LLMs are about the %d prompts given", n, fn.target["n_prompts"])
    return fn.target


def calibrate(cfg: DictConfig, engine: Engine) -> dict | None:
    """Tune the router on validation data (``calibration.data``: a Results config node)."""
    cal = cfg.get("calibration")
    if not cal or cal.get("data") is None:
        return None
    data = instantiate(cal.data)
    names = [n for n in engine.registry.names() if n in data.llms]
    if not names:
        raise ConfigError(f"calibration data has none of the registered LLMs {engine.registry.names()}")
    ids = data.instance_ids
    if cal.get("max_prompts") and len(ids) > cal.max_prompts:
        ids = list(np.random.default_rng(cfg.seed).choice(ids, int(cal.max_prompts), replace=False))
    prompts = data.prompts(ids)
    names, P = engine.predict(prompts, names)
    C = engine.registry.cost_matrix(engine.registry.resolve(names), prompts)
    C_true = data.cost[data.llm_index(names)][:, data.instance_index(ids)] if (cal.get("use_data_cost") and data.cost is not None) else None
    engine.router.calibrate(P, data.matrix(names, ids), C, target_accuracy=cal.get("target_accuracy"),
                            budget=cal.get("budget"), C_true=None if C_true is None else np.nan_to_num(C_true))
    log.info("calibrated %s: %s", type(engine.router).__name__, engine.router.calibration_)
    return engine.router.calibration_


__all__ = ["calibrate", "engine_from_cfg", "plain", "report", "save_trust_reports", "tracking_uri_from_cfg",
           "trust_about_prompts", "trust_reports", "verdict_counts"]
