"""What ``predict.py`` runs: one function per ``mode`` (score, route, serve, onboard).

``conf/predict.yaml`` points ``task._target_`` at ``assessors.predict_tasks.${mode}``; each
function takes the composed config, prints a JSON summary and returns it.
"""
from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from assessors.errors import ConfigError, DataError
from assessors.routing.engine import Engine, load_assessor_model
from assessors.routing.registry import LLMRegistry

log = logging.getLogger("assessors.predict")

ID_COLUMNS = ("instance_id", "reference_id", "id")


# ------------------------------------------------------------------------ file formats
def read_prompts(path: str | os.PathLike) -> pd.DataFrame:
    """Prompts from CSV or JSONL: a ``prompt`` column and an optional id column -> ``id, prompt``."""
    p = Path(path)
    if not p.exists():
        raise DataError(f"{p}: prompts file not found")
    df = pd.read_json(p, lines=True, dtype=False) if p.suffix in (".jsonl", ".json") \
        else pd.read_csv(p, dtype=str, keep_default_na=False)
    if "prompt" not in df.columns:
        raise DataError(f"{p}: no 'prompt' column (columns: {list(df.columns)})")
    idc = next((c for c in ID_COLUMNS if c in df.columns), None)
    ids = df[idc].astype(str) if idc else pd.Series(np.arange(len(df)).astype(str))
    bad = df["prompt"].isna() | (df["prompt"].astype(str).str.len() == 0)
    if bad.any():
        raise DataError(f"{p}: empty prompt in row {int(np.flatnonzero(bad.to_numpy())[0]) + 2}")
    return pd.DataFrame({"id": ids.to_numpy(), "prompt": df["prompt"].astype(str).to_numpy()})


def read_reference(path: str | os.PathLike, llm: str | None = None) -> dict[str, float]:
    """Reference results of one LLM as ``{reference id: success}``.

    Accepts an onboarding output directory (``<dir>/results`` or a ``Results`` parquet
    directory), a CSV with an id column (``instance_id``/``reference_id``/``id``) and
    ``success`` (plus ``llm`` to pick one of several LLMs), or JSON ``{id: success}``.
    """
    p = Path(path)
    if not p.exists():
        raise DataError(f"{p}: reference results not found")
    if p.is_dir():
        from assessors.data.results import Results

        res = Results.from_parquet(p / "results" if (p / "results").exists() else p)
        name = llm if llm in res.llms else (res.llms[0] if len(res.llms) == 1 else None)
        if name is None:
            raise DataError(f"{p}: holds LLMs {res.llms}; set the LLM name to pick one")
        row = res.success[res.llms.index(name)]
        return {i: float(v) for i, v in zip(res.instance_ids, row) if np.isfinite(v)}
    if p.suffix == ".json":
        data = json.loads(p.read_text())
        if not isinstance(data, dict):
            raise DataError(f"{p}: expected a JSON object {{reference id: success}}")
        return {str(k): (None if v is None else float(v)) for k, v in data.items()}
    df = pd.read_csv(p, dtype={c: str for c in ID_COLUMNS + ("llm",)})
    idc = next((c for c in ID_COLUMNS if c in df.columns), None)
    if idc is None or "success" not in df.columns:
        raise DataError(f"{p}: need an id column ({'/'.join(ID_COLUMNS)}) and 'success' (have {list(df.columns)})")
    if "llm" in df.columns:
        if llm is None and df["llm"].nunique() > 1:
            raise DataError(f"{p}: holds several LLMs ({sorted(df['llm'].unique())[:5]}); set the LLM name")
        df = df[df["llm"] == llm] if llm is not None else df
    dup = df[idc].duplicated()
    if dup.any():
        raise DataError(f"{p}: reference id {df[idc][dup].iloc[0]!r} appears twice (row {int(np.flatnonzero(dup)[0]) + 2})")
    return {str(i): (None if pd.isna(v) else float(v)) for i, v in zip(df[idc], df["success"])}


def write_table(df: pd.DataFrame, path: str | os.PathLike) -> Path:
    """CSV or JSONL (by suffix), written atomically."""
    from assessors.io import atomic_write

    if Path(path).suffix in (".jsonl", ".json"):
        return atomic_write(path, lambda tmp: df.to_json(tmp, orient="records", lines=True))
    return atomic_write(path, lambda tmp: df.to_csv(tmp, index=False))


# ---------------------------------------------------------------------------- engine
def _plain(node) -> Any:
    return OmegaConf.to_container(node, resolve=True) if isinstance(node, DictConfig) or OmegaConf.is_config(node) else node


def trust_hook(model, trust: Mapping | None):
    """The registry's trust-report callable (reference -> dict) for ``model``.

    ``trust`` is ``{enabled: bool, **report options}`` (the built-in report of
    :mod:`assessors.trust`), a node with a ``_target_`` for a custom callable, or None (off).
    """
    trust = _plain(trust)
    if not trust:
        return None
    if "_target_" in trust:
        return instantiate(trust)
    if not trust.get("enabled", True):
        return None
    if hasattr(model.assessor, "posterior"):  # a latent assessor: report v2, whose verdict drives the fallback
        from assessors.trust.posterior_policy import make_posterior_trust_fn

        return make_posterior_trust_fn(model, fallback=trust.get("fallback", True), **(trust.get("posterior") or {}))
    opts = {k: v for k, v in trust.items() if k not in ("enabled", "fallback", "posterior")}
    from assessors.trust.report import make_trust_fn

    return make_trust_fn(model, **opts)


def tracking_uri_from_cfg(cfg: DictConfig) -> str | None:
    """The MLflow store of ``cfg.tracking`` (the same absolute URI train.py logs to), or None."""
    from assessors.tracking import MlflowTracker, tracker_from_cfg

    tracker = tracker_from_cfg(cfg) if cfg.get("tracking") is not None else None
    return tracker.uri if isinstance(tracker, MlflowTracker) else None


def build_engine(model_uri: str | None, router: Mapping | None = None, llms: Sequence[Mapping] = (),
                 known_llms: Any = None, default_cost: Mapping | None = None, trust: Mapping | None = None,
                 embed_cache_size: int = 10_000, model=None, tracking_uri: str | None = None) -> Engine:
    """Load the assessor from ``model_uri`` (config only) and register the configured LLMs.

    ``llms`` entries: ``{name, reference: path | null, cost: {...}}``; a null reference means
    an LLM known to the model from training. ``tracking_uri``: the MLflow store ``runs:/``
    URIs are looked up in.
    """
    model = model if model is not None else load_assessor_model(model_uri, tracking_uri)
    engine = Engine(model, LLMRegistry(model.reference_ids, trust_fn=trust_hook(model, trust),
                                       check=getattr(model.assessor, "check_reference", None)),
                    router=instantiate(_plain(router)) if router else None, embed_cache_size=embed_cache_size)
    default_cost = dict(_plain(default_cost) or {})
    known = list(getattr(model, "llms", []))
    if known_llms:
        names = known if known_llms == "all" else list(known_llms)
        engine.register_known(names, cost=default_cost)
    for spec in map(_plain, llms or ()):
        if "name" not in spec:
            raise ConfigError(f"llms entry {spec} has no 'name'")
        name, ref, cost = spec["name"], spec.get("reference"), {**default_cost, **(spec.get("cost") or {})}
        if ref is None:
            engine.register_known([name], cost=cost)
        else:
            engine.registry.register(name, read_reference(ref, name), cost=cost, source=str(ref), overwrite=True)
    return engine


def engine_from_settings(settings) -> Engine:
    """The app factory's default: build the engine from ``ServerSettings``."""
    return build_engine(settings.model_uri, settings.router, settings.llms, settings.known_llms,
                        settings.default_cost, settings.trust, settings.embed_cache_size,
                        tracking_uri=settings.tracking_uri)


def engine_from_cfg(cfg: DictConfig, model=None) -> Engine:
    return build_engine(cfg.model_uri, cfg.get("router"), cfg.get("llms") or [], cfg.get("known_llms"),
                        cfg.get("default_cost"), cfg.get("trust"), cfg.server.embed_cache_size, model=model,
                        tracking_uri=tracking_uri_from_cfg(cfg))


def _report(out: dict) -> dict:
    """Print a mode's summary as JSON on stdout (what scripts parse) and return it."""
    print(json.dumps(out, indent=2, default=str), file=sys.stdout)
    return out


def _trust_reports(engine: Engine) -> dict[str, dict]:
    """Trust reports of the registered LLMs that have one, also logged (stderr): stdout holds only the summary."""
    reports = {e.name: e.trust for e in engine.registry.resolve(None) if e.trust is not None}
    for name, report in reports.items():
        log.info("trust report for %s: %s", name, json.dumps(report, indent=2, default=str))
    return reports


# ----------------------------------------------------------------------------- modes
def score(cfg: DictConfig, model=None) -> dict:
    """P(success) of every configured LLM on every prompt -> long table ``id, llm, p_success``."""
    engine = engine_from_cfg(cfg, model)
    if not cfg.prompts:
        raise ConfigError("mode=score needs prompts=<CSV or JSONL with a 'prompt' column>")
    prompts = read_prompts(cfg.prompts)
    names, P, STD = engine.predict_with_spread(prompts["prompt"].tolist())
    trust = _trust_reports(engine)
    predictors = {e.name: e.predictor_name for e in engine.registry.resolve(names)}
    out = pd.DataFrame({"id": np.tile(prompts["id"].to_numpy(), len(names)),
                        "llm": np.repeat(names, len(prompts)), "p_success": P.ravel()})
    if STD is not None:  # posterior-predictive spread (assessor=latent); NaN where the fallback scored
        out["p_std"] = STD.ravel()
    # "assessor", or the fallback that an "out of population" trust verdict switched the LLM to
    out["predictor"] = np.repeat([predictors[n] for n in names], len(prompts))
    path = write_table(out, cfg.out or Path(cfg.paths.outputs) / "predict" / "scores.csv")
    log.info("wrote %d scores (%d prompts x %d LLMs) to %s", len(out), len(prompts), len(names), path)
    return _report({"n_prompts": len(prompts), "llms": names, "out": str(path),
                    "mean_p_success": {n: float(P[i].mean()) for i, n in enumerate(names)},
                    "predictors": predictors, "trust": trust})


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


def route(cfg: DictConfig, model=None) -> dict:
    """One decision per prompt -> table ``id, llm, expected_cost, p_chosen, p_success[<llm>]...``."""
    engine = engine_from_cfg(cfg, model)
    if engine.router is None:
        raise ConfigError("mode=route needs a router (router=threshold|utility|abstain)")
    if not cfg.prompts:
        raise ConfigError("mode=route needs prompts=<CSV or JSONL with a 'prompt' column>")
    cal = calibrate(cfg, engine)
    prompts = read_prompts(cfg.prompts)
    routing = engine.route(prompts["prompt"].tolist())
    df = routing.to_frame()
    df.insert(0, "id", prompts["id"].to_numpy())
    path = write_table(df, cfg.out or Path(cfg.paths.outputs) / "predict" / "routes.csv")
    counts = df["llm"].fillna("(abstain)").value_counts().to_dict()
    log.info("routed %d prompts: %s; wrote %s", len(df), counts, path)
    return _report({"n_prompts": len(df), "chosen": counts, "total_expected_cost": float(df["expected_cost"].sum()),
                    "calibration": cal, "out": str(path)})


def server_settings(cfg: DictConfig):
    from assessors.serving.settings import ServerSettings

    return ServerSettings.model_validate({**_plain(cfg.server), "model_uri": cfg.model_uri,
                                          "tracking_uri": tracking_uri_from_cfg(cfg),
                                          "router": _plain(cfg.get("router")), "llms": _plain(cfg.get("llms") or []),
                                          "known_llms": _plain(cfg.get("known_llms")),
                                          "default_cost": _plain(cfg.get("default_cost") or {}),
                                          "trust": _plain(cfg.get("trust"))})


def serve(cfg: DictConfig, model=None) -> dict:
    """Start the HTTP server (uvicorn) with the configured model, router and LLMs."""
    import uvicorn

    from assessors.serving.app import create_app

    settings = server_settings(cfg)
    run = dict(host=settings.host, port=settings.port, log_level=settings.log_level, timeout_keep_alive=5,
               timeout_graceful_shutdown=10)
    if settings.workers > 1:
        # each worker process loads the model and registers the configured LLMs itself (see app_from_env)
        from assessors.serving.app import SETTINGS_ENV

        if model is not None or not cfg.model_uri:
            raise ConfigError("server.workers > 1 needs model_uri: every worker process loads the model from it")
        if cfg.get("calibration") and cfg.calibration.get("data") is not None:
            engine = engine_from_cfg(cfg)
            calibrate(cfg, engine)  # calibrate once here; the workers get the tuned knob
            settings.router = {**(settings.router or {}), engine.router.knob: float(engine.router.knob_value)}
        os.environ[SETTINGS_ENV] = settings.model_dump_json()
        log.info("serving on http://%s:%d with %d worker processes (OpenAPI at /docs)", settings.host, settings.port,
                 settings.workers)
        uvicorn.run("assessors.serving.app:app_from_env", factory=True, workers=settings.workers, **run)
        return {}
    engine = engine_from_cfg(cfg, model)
    calibrate(cfg, engine)
    app = create_app(settings, engine=engine)
    log.info("serving %d LLMs on http://%s:%d (OpenAPI at /docs)", len(engine.registry), settings.host, settings.port)
    uvicorn.run(app, **run)
    return {}


def onboard(cfg: DictConfig, model=None) -> dict:
    """Run a new LLM on the model's reference prompts (conf/onboarding) -> ``<out>/reference.csv``."""
    from assessors.onboarding.cli import read_prompts as read_reference_prompts

    model = model if model is not None else load_assessor_model(cfg.model_uri, tracking_uri_from_cfg(cfg))
    ob = cfg.onboard
    if not ob.prompts:
        raise ConfigError("mode=onboard needs onboard.prompts=[files with the reference prompts and targets]")
    strategy = ob.get("strategy", "reference")
    if strategy not in ("auto", "adaptive", "reference"):
        raise ConfigError(f"onboard.strategy must be auto, adaptive or reference, got {strategy!r}")
    adaptive_ok = hasattr(model.assessor, "posterior")
    if strategy == "adaptive" and not adaptive_ok:
        raise ConfigError(f"onboard.strategy=adaptive needs a latent assessor (train with assessor=latent); "
                          f"{model_uri_name(cfg)} holds {type(model.assessor).__name__}. Use onboard.strategy=reference")
    if strategy == "adaptive" or (strategy == "auto" and adaptive_ok):
        return _report(onboard_adaptive(cfg, model))
    ref_ids = list(model.reference_ids)
    prompts = read_reference_prompts(list(ob.prompts), ids=set(ref_ids))
    missing = sorted(set(ref_ids) - set(prompts["instance_id"]))
    if missing:
        log.warning("%d of %d reference prompts are not in %s (e.g. %s); they stay unanswered",
                    len(missing), len(ref_ids), list(ob.prompts), missing[:3])
    if prompts.empty:
        raise DataError(f"none of the {len(ref_ids)} reference ids occur in {list(ob.prompts)}")
    out_dir = Path(ob.out_dir)
    results, summary = instantiate(cfg.onboarding).run(prompts, out_dir)
    name = results.llms[0]
    ref = pd.DataFrame({"reference_id": results.instance_ids, "success": results.success[0]})
    path = write_table(ref, out_dir / "reference.csv")
    # registering validates the vector against the model and computes the trust report (when configured)
    reg = LLMRegistry(ref_ids, trust_fn=trust_hook(model, cfg.get("trust")),
                      check=getattr(model.assessor, "check_reference", None))
    entry = reg.register(name, read_reference(path), source=str(path))
    if entry.trust is not None:
        log_onboarding_trust(cfg, name, entry.trust)
    return _report({"llm": name, "reference": str(path), **entry.summary(), "onboarding": summary})


def model_uri_name(cfg: DictConfig) -> str:
    return str(cfg.get("model_uri") or "the model")


def onboard_adaptive(cfg: DictConfig, model) -> dict:
    """Ask the new LLM adaptively chosen prompts of the pool (``onboard.prompts``) -> ``<out>/answers.csv``."""
    import hashlib

    from assessors.onboarding.adaptive_run import AdaptiveOnboarding
    from assessors.onboarding.cli import read_prompts as read_pool

    ob = cfg.onboard
    pool = read_pool(list(ob.prompts))
    if pool.empty:
        raise DataError(f"the candidate pool {list(ob.prompts)} holds no prompts")
    X_target = None
    if ob.get("target"):
        X_target = model.featurizer.transform(read_prompts(ob.target)["prompt"].tolist())
    # the assessor's identity: its reference ids and item network (a retrained model is another assessor)
    a, b = model.assessor.item_parameters(model.assessor.reference_features_[:16])
    ident = hashlib.sha256(json.dumps(list(model.reference_ids)).encode()
                           + np.round(a, 4).tobytes() + np.round(b, 4).tobytes()).hexdigest()[:16]
    runner = AdaptiveOnboarding(instantiate(cfg.onboarding), instantiate(cfg.adaptive), model.assessor,
                                model.featurizer, assessor_id=ident)
    summary = {"strategy": "adaptive", **runner.run(pool, Path(ob.out_dir), X_target=X_target)}
    trust = _plain(cfg.get("trust")) or {}
    if trust.get("enabled", True) and "_target_" not in trust:
        from assessors.trust.posterior_policy import PosteriorTrustPolicy

        sel = runner.selector_
        policy = PosteriorTrustPolicy(fallback=trust.get("fallback", True),
                                      **{"seed": int(cfg.seed), **(trust.get("posterior") or {})})
        report, _ = policy.assess(model.assessor, sel.X_pool_[runner.asked_], runner.answers_, sel.X_target_,
                                  llm=summary["llm"])
        summary["trust"] = report
        summary["predictor"] = report["fallback"]["predictor"]
        print(f"trust report for {summary['llm']}: {report['message']} (predictions: {summary['predictor']})",
              file=sys.stderr)
        log_onboarding_trust(cfg, summary["llm"], report)
    return summary


def log_onboarding_trust(cfg: DictConfig, llm: str, report: dict) -> None:
    """Log an onboarded LLM's trust report to the configured tracker (``tracking=none`` turns it off)."""
    from assessors.tracking import tracker_from_cfg
    from assessors.trust.posterior_policy import log_posterior_trust

    with tracker_from_cfg(cfg).start_run(f"onboard {llm}", tags={"mode": "onboard", "llm": llm}) as run:
        if report.get("version") == 2:
            log_posterior_trust(run, report)
        else:
            run.log_dict(report, "trust/report.json")
