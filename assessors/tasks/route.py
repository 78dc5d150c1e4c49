"""``predict.py mode=route``: one routing decision per prompt with the configured router."""
from __future__ import annotations

import logging
from pathlib import Path

from omegaconf import DictConfig

from assessors.data.prompt_files import read_prompts, write_table
from assessors.errors import ConfigError
from assessors.tasks.predict_common import calibrate, engine_from_cfg, report, trust_about_prompts

log = logging.getLogger("assessors.predict")


def run(cfg: DictConfig, model=None) -> dict:
    """One decision per prompt -> table ``id, llm, expected_cost, p_chosen, p_success[<llm>]...``."""
    engine = engine_from_cfg(cfg, model)
    if engine.router is None:
        raise ConfigError("mode=route needs a router (router=threshold|utility|abstain)")
    if not cfg.prompts:
        raise ConfigError("mode=route needs prompts=<CSV or JSONL with a 'prompt' column>")
    cal = calibrate(cfg, engine)
    prompts = read_prompts(cfg.prompts)
    trust_about_prompts(cfg, engine, prompts["prompt"])  # before routing: the verdict picks each LLM's predictor
    routing = engine.route(prompts["prompt"].tolist())
    df = routing.to_frame()
    df.insert(0, "id", prompts["id"].to_numpy())
    path = write_table(df, cfg.out or Path(cfg.paths.outputs) / "predict" / "routes.csv")
    counts = df["llm"].fillna("(abstain)").value_counts().to_dict()
    log.info("routed %d prompts: %s; wrote %s", len(df), counts, path)
    return report({"n_prompts": len(df), "chosen": counts, "total_expected_cost": float(df["expected_cost"].sum()),
                   "calibration": cal, "out": str(path)}, cfg)
