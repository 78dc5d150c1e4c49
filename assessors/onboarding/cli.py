"""Command line: ``python -m assessors.onboarding --prompts FILE... --out DIR [key=value ...]``.

``key=value`` pairs are Hydra overrides of ``conf/onboarding/default.yaml`` (e.g.
``base_url=http://127.0.0.1:8080/v1 model=smollm2 concurrency=1``; ``graders.graders.*x=...``
works as in any Hydra override). Prints the summary as JSON.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Sequence

from assessors.data.prompts import read_prompt_files as read_prompts  # the name predict_tasks imports

CONF_DIR = Path(__file__).resolve().parents[2] / "conf"


def main(argv: Sequence[str] | None = None) -> dict:
    from hydra import compose, initialize_config_dir
    from hydra.utils import instantiate

    ap = argparse.ArgumentParser(prog="python -m assessors.onboarding", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prompts", nargs="+", required=True, help="CSV/JSONL files with instance_id|id, prompt, target[, subgroup]")
    ap.add_argument("--out", required=True, help="output directory (journal.jsonl, results/, summary.json)")
    ap.add_argument("--limit", type=int, default=None, help="first N prompts per file")
    ap.add_argument("--ids", default=None, help="text file of reference instance ids, one per line")
    ap.add_argument("overrides", nargs="*", help="overrides of conf/onboarding/default.yaml, e.g. model=x")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    ids = set(Path(args.ids).read_text().split()) if args.ids else None
    prompts = read_prompts(args.prompts, limit=args.limit, ids=ids)
    overrides = [o if o.startswith(("onboarding.", "+", "~")) else f"onboarding.{o}" for o in args.overrides]
    with initialize_config_dir(str(CONF_DIR), version_base=None):
        cfg = compose(config_name="onboarding/default", overrides=overrides)
    _, summary = instantiate(cfg.onboarding).run(prompts, args.out)
    json.dump(summary, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return summary
