"""``experiment=variants``: few-shot prompt variants for confidence profiles (:mod:`assessors.onboarding.variants`).

Reads ``variants.prompts`` files and, with ``variants.use_data=true``, the configured ``data``'s
prompts; writes ``variants.k`` prompt files ``<variants.out>/v<k>.jsonl`` and prints their paths.
"""
from __future__ import annotations

import pandas as pd
from hydra.utils import instantiate

from assessors.errors import ConfigError
from assessors.data.prompts import read_prompt_files as read_prompts
from assessors.onboarding.variants import data_prompts, few_shot_variants, write_variants


def run(cfg) -> dict:
    """Write the variant prompt files; returns ``{"written": [paths]}``."""
    v = cfg.variants
    frames = [read_prompts(list(v.prompts))] if v.prompts else []
    if v.get("use_data"):
        frames.append(data_prompts(instantiate(cfg.data)))
    if not frames:
        raise ConfigError("experiment=variants needs variants.prompts=[files] and/or variants.use_data=true")
    tables = few_shot_variants(pd.concat(frames, ignore_index=True), int(v.k), int(v.shots), v.get("limit"),
                               int(cfg.seed))
    written = write_variants(tables, v.out)
    print("\n".join(written))
    return {"written": written}
