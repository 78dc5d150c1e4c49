"""Few-shot prompt variants for confidence profiles: K demonstration draws per dataset.

The label-free estimator needs several confidence profiles per dataset. A *variant* fixes one
random draw of ``shots`` demonstrations per subgroup (taken from items that are never
evaluated) and prepends them, as earlier chat turns, to every evaluated item of that subgroup.

Command line (writes ``<out>/v0.jsonl`` ... and prints what it wrote)::

    python -m assessors.onboarding.variants --prompts P/bbh_*_prompts.csv --limit 35 --k 3 \\
        --shots 1 --out outputs/variants [--data openai_evals]

Each file is a prompts table for ``python -m assessors.onboarding --prompts <out>/v0.jsonl``;
:func:`combine` stacks the onboarding outputs into one long table (``llm = <name>#v<k>``).
"""
from __future__ import annotations

import argparse
import json
import logging
import zlib
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from assessors.data.columns import require_columns
from assessors.errors import ConfigError, DataError

log = logging.getLogger(__name__)


def split_chat_prompt(prompt: str) -> tuple[str | None, str]:
    """Split an openai_evals rendering ``"system: S\\nuser: U"`` into ``(S, U)``; else ``(None, prompt)``."""
    if prompt.startswith("system: ") and "\nuser: " in prompt:
        system, user = prompt[len("system: "):].split("\nuser: ", 1)
        if "\nassistant: " not in user:  # multi-turn renderings are kept as plain text
            return system.strip(), user.strip()
    return None, prompt


def few_shot_variants(prompts: pd.DataFrame, k: int = 3, shots: int = 1, limit: int | None = None,
                      seed: int = 0) -> list[pd.DataFrame]:
    """Build ``k`` prompt tables that differ only in their demonstration draw.

    Parameters
    ----------
    prompts : DataFrame
        Columns ``instance_id, prompt, target, subgroup`` (optional ``system_prompt``).
    k : int
        Number of variants (profiles per dataset).
    shots : int
        Demonstrations per variant; 0 gives ``k`` identical zero-shot tables.
    limit : int, optional
        Evaluated items per subgroup (its first ``limit`` rows). The remaining rows are the
        demonstration pool, so a demonstration is never an evaluated item.
    seed : int
        Variant ``v`` of subgroup ``g`` draws with ``default_rng([seed, v, crc32(g)])``.

    Returns
    -------
    list of DataFrame
        ``k`` tables with the evaluated rows and a ``shots`` column (JSON list of [prompt, answer]).
    """
    require_columns(prompts, ("instance_id", "prompt", "target", "subgroup"), "prompts")
    if k < 1 or shots < 0:
        raise ConfigError(f"few_shot_variants: need k >= 1 and shots >= 0, got k={k}, shots={shots}")
    out: list[list[pd.DataFrame]] = [[] for _ in range(k)]
    for group, rows in prompts.groupby("subgroup", sort=False):
        rows = rows.reset_index(drop=True)
        n_eval = len(rows) if limit is None else min(int(limit), len(rows))
        pool = rows.iloc[n_eval:]
        if shots and len(pool) < shots:
            raise DataError(f"subgroup {group!r}: {len(rows)} items leave {len(pool)} for demonstrations, "
                            f"fewer than shots={shots}; lower --limit")
        evaluated = rows.iloc[:n_eval]
        for v in range(k):
            rng = np.random.default_rng([seed, v, zlib.crc32(str(group).encode())])
            demo = pool.iloc[np.sort(rng.choice(len(pool), size=shots, replace=False))] if shots else pool.iloc[:0]
            pairs = json.dumps([[str(p), str(t)] for p, t in zip(demo["prompt"], demo["target"])])
            out[v].append(evaluated.assign(shots=pairs))
    return [pd.concat(parts, ignore_index=True) for parts in out]


def combine(out_dirs: Sequence[str | Path], names: Sequence[str]) -> pd.DataFrame:
    """Stack onboarding outputs (``<dir>/results``) into one long table.

    Returns
    -------
    DataFrame
        Columns ``llm, instance_id, subgroup, success, confidence``; only graded cells.
    """
    from assessors.data.results import Results

    if len(out_dirs) != len(names):
        raise ConfigError(f"combine: {len(out_dirs)} directories but {len(names)} names")
    frames = []
    for d, name in zip(out_dirs, names):
        res = Results.from_parquet(Path(d) / "results")
        long = res.to_long().assign(llm=name)
        long["subgroup"] = res.instances["subgroup"].astype(str).reindex(long["instance_id"]).to_numpy()
        frames.append(long[["llm", "instance_id", "subgroup", "success", "confidence"]])
    table = pd.concat(frames, ignore_index=True)
    return table[table["success"].notna()].reset_index(drop=True)


def _load_prompts(files: Sequence[str], data: Sequence[str]) -> pd.DataFrame:
    from assessors.data.prompts import read_prompt_files as read_prompts

    frames = [read_prompts(files)] if files else []
    for name in data:  # a `data=` option with prompts, e.g. openai_evals
        from hydra import compose, initialize_config_dir
        from hydra.utils import instantiate

        from assessors.onboarding.cli import CONF_DIR
        with initialize_config_dir(str(CONF_DIR), version_base=None):
            cfg = compose(config_name="train", overrides=[f"data={name}"])
        res = instantiate(cfg.data)
        res.require_prompts()
        inst = res.instances.reset_index().rename(columns={res.instances.index.name or "index": "instance_id"})
        split = inst["prompt"].astype(str).map(split_chat_prompt)
        inst["system_prompt"] = [s for s, _ in split]
        inst["prompt"] = [u for _, u in split]
        frames.append(inst[["instance_id", "prompt", "target", "subgroup", "system_prompt"]])
    if not frames:
        raise ConfigError("give --prompts files and/or --data options")
    return pd.concat(frames, ignore_index=True)


def main(argv: Sequence[str] | None = None) -> list[str]:
    ap = argparse.ArgumentParser(prog="python -m assessors.onboarding.variants", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prompts", nargs="*", default=[], help="CSV/JSONL prompt files (as for onboarding)")
    ap.add_argument("--data", nargs="*", default=[], help="data= options with prompts, e.g. openai_evals")
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--shots", type=int, default=1)
    ap.add_argument("--limit", type=int, default=None, help="evaluated items per subgroup")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    tables = few_shot_variants(_load_prompts(args.prompts, args.data), args.k, args.shots, args.limit, args.seed)
    from assessors.io import atomic_write

    written = []
    for v, t in enumerate(tables):
        # atomic: a killed run never leaves half a prompts file
        path = atomic_write(Path(args.out) / f"v{v}.jsonl",
                            lambda tmp, t=t: t.to_json(tmp, orient="records", lines=True, force_ascii=False))
        written.append(str(path))
        log.info("wrote %s: %d items in %d subgroups", path, len(t), t["subgroup"].nunique())
    print("\n".join(written))
    return written


if __name__ == "__main__":
    main()
