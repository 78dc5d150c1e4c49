"""Reference results of an LLM that is in the shared data, for a trained model.

    python examples/reference_from_data.py <LLM name> <out.csv> [--model-uri URI]

A new LLM is registered by its results on the model's reference prompts. For an LLM whose
results you already have (here: one of the Open LLM Leaderboard v2 LLMs in
``$ASSESSORS_DATA_DIR``), this writes them as ``reference_id,success`` for the model in
``--model-uri`` (default ``$ASSESSORS_MODEL_URI``). For an LLM you can query instead, use
``python predict.py mode=onboard`` (docs/onboarding.md).
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path

import pandas as pd

from assessors.data.loaders.open_llm_leaderboard_v2 import load_open_llm_leaderboard_v2
from assessors.io import atomic_write
from assessors.routing.engine import load_assessor_model


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("llm", help="LLM name as in the data, e.g. lmsys__vicuna-7b-v1.5")
    ap.add_argument("out", help="output CSV (reference_id, success)")
    ap.add_argument("--model-uri", default=os.environ.get("ASSESSORS_MODEL_URI"),
                    help="trained model (default: $ASSESSORS_MODEL_URI)")
    args = ap.parse_args(argv)
    ref_ids = list(load_assessor_model(args.model_uri).reference_ids)
    # only the subtasks the reference prompts come from (ids are <subtask>/<item>)
    res = load_open_llm_leaderboard_v2(subtasks=sorted({i.split("/")[0] for i in ref_ids}))
    if args.llm not in res.llms:
        raise SystemExit(f"{args.llm!r} is not in the data; LLMs are e.g. {res.llms[:3]}")
    missing = [i for i in ref_ids if i not in set(res.instance_ids)]
    if missing:
        raise SystemExit(f"{len(missing)} reference ids of the model are not in the data, e.g. {missing[:3]}")
    success = res.matrix([args.llm], ref_ids)[0]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    table = pd.DataFrame({"reference_id": ref_ids, "success": success})
    atomic_write(out, lambda tmp: table.to_csv(tmp, index=False))
    print(f"wrote {out}: {args.llm} on {len(ref_ids)} reference prompts, accuracy {success.mean():.3f}")


if __name__ == "__main__":
    main()
