"""``predict.py mode=score``: P(success) of every configured LLM on every prompt."""
from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd
from omegaconf import DictConfig

from assessors.data.prompt_files import read_prompts, write_table
from assessors.errors import ConfigError
from assessors.tasks.predict_common import engine_from_cfg, report, trust_about_prompts, trust_reports

log = logging.getLogger("assessors.predict")


def run(cfg: DictConfig, model=None) -> dict:
    """P(success) of every configured LLM on every prompt -> long table ``id, llm, p_success``."""
    engine = engine_from_cfg(cfg, model)
    if not cfg.prompts:
        raise ConfigError("mode=score needs prompts=<CSV or JSONL with a 'prompt' column>")
    prompts = read_prompts(cfg.prompts)
    trust_about_prompts(cfg, engine, prompts["prompt"])  # before scoring: the verdict picks each LLM's predictor
    names, P, STD = engine.predict_with_spread(prompts["prompt"].tolist())
    trust = trust_reports(engine)
    predictors = {e.name: e.predictor_name for e in engine.registry.resolve(names)}
    out = pd.DataFrame({"id": np.tile(prompts["id"].to_numpy(), len(names)),
                        "llm": np.repeat(names, len(prompts)), "p_success": P.ravel()})
    if STD is not None:  # posterior-predictive spread (assessor=latent); NaN where the fallback scored
        out["p_std"] = STD.ravel()
    # "assessor", or the fallback that an "out of population" trust verdict switched the LLM to
    out["predictor"] = np.repeat([predictors[n] for n in names], len(prompts))
    path = write_table(out, cfg.out or Path(cfg.paths.outputs) / "predict" / "scores.csv")
    log.info("wrote %d scores (%d prompts x %d LLMs) to %s", len(out), len(prompts), len(names), path)
    return report({"n_prompts": len(prompts), "llms": names, "out": str(path),
                   "mean_p_success": {n: float(P[i].mean()) for i, n in enumerate(names)},
                   "predictors": predictors, "trust": trust}, cfg)
