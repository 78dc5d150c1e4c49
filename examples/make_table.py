"""Write a small "bring your own results" pair in the `table` format from the shared data.

    python examples/make_table.py --out outputs/examples

Writes ``<out>/results.csv`` (long: ``llm, instance_id, success``) and ``<out>/prompts.csv``
(``instance_id, prompt, subgroup``) for a few BBH subtasks of the Open LLM Leaderboard v2 data
read from ``$ASSESSORS_DATA_DIR``. Train on them with
``python train.py data=table data.results_path=<out>/results.csv data.prompts_path=<out>/prompts.csv``.
The format is described in ``datasets/table_format.md``.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from assessors.data.loaders.open_llm_leaderboard_v2 import load_open_llm_leaderboard_v2
from assessors.io import atomic_write


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="outputs/examples", help="output directory")
    ap.add_argument("--subtasks", nargs="+", default=["bbh_navigate", "bbh_snarks", "bbh_sports_understanding"],
                    help="Open LLM Leaderboard v2 subtasks to export")
    args = ap.parse_args(argv)
    res = load_open_llm_leaderboard_v2(subtasks=args.subtasks)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    long = res.to_long()
    long["success"] = long["success"].astype(int)
    prompts = res.instances.reset_index()[["instance_id", "prompt", "subgroup"]] \
        if "subgroup" in res.instances.columns else res.instances.reset_index()[["instance_id", "prompt"]]
    atomic_write(out / "results.csv", lambda tmp: long.to_csv(tmp, index=False))
    atomic_write(out / "prompts.csv", lambda tmp: prompts.to_csv(tmp, index=False))
    print(f"wrote {out / 'results.csv'} ({len(res.llms)} LLMs x {len(prompts)} prompts) and {out / 'prompts.csv'}")


if __name__ == "__main__":
    main()
