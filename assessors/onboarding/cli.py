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

import pandas as pd

from assessors.errors import DataError

CONF_DIR = Path(__file__).resolve().parents[2] / "conf"


def read_prompts(paths: Sequence[str], limit: int | None = None, ids: set[str] | None = None) -> pd.DataFrame:
    """Read prompt tables (CSV or JSONL) into ``instance_id, prompt, target, subgroup``.

    ``id`` is accepted for ``instance_id``. Without a ``subgroup`` column the file stem
    (minus a ``_prompts`` suffix) is the subgroup and ids become ``<subgroup>/<id>``, as the
    ``open_llm_leaderboard_v2`` loader names them (``prompts/bbh_navigate_prompts.csv`` row
    ``id=3`` -> ``bbh_navigate/3``). ``limit`` keeps the first rows per file; ``ids`` keeps
    only those instance ids.
    """
    frames = []
    for p in map(Path, paths):
        if not p.exists():
            raise DataError(f"{p}: prompts file not found")
        df = pd.read_json(p, lines=True, dtype=False) if p.suffix in (".jsonl", ".json") else pd.read_csv(p, dtype=str, keep_default_na=False)
        if "instance_id" not in df.columns and "id" in df.columns:
            df = df.rename(columns={"id": "instance_id"})
        for col in ("instance_id", "prompt", "target"):
            if col not in df.columns:
                raise DataError(f"{p}: missing column {col!r} (have {list(df.columns)})")
        df["instance_id"] = df["instance_id"].astype(str)
        if "subgroup" not in df.columns:
            df["subgroup"] = p.stem.removesuffix("_prompts")
            df["instance_id"] = df["subgroup"] + "/" + df["instance_id"]
        if ids is not None:
            df = df[df["instance_id"].isin(ids)]
        frames.append(df.head(limit) if limit else df)
    return pd.concat(frames, ignore_index=True)


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
