"""Train the latent-ability assessor on answers kept on disk, for data that does not fit in memory.

    python examples/latent_stream_from_disk.py --out outputs/examples/stream [--features minilm]

1. Writes the training LLMs' answers to ``<out>/answers/answers.npy``, the format the streaming
   fit reads (prompt-major uint8, ``255`` = not evaluated), a few LLMs at a time, as you would
   export them from a database or from one result file per LLM: only one chunk of LLMs is in
   memory at once (here the chunks come from the Open LLM Leaderboard v2 files in
   ``$ASSESSORS_DATA_DIR``).
2. Fits :class:`~assessors.core.latent_stream.StreamingLatentAssessor` on that directory: it reads
   ``batch_prompts`` prompts with all their LLMs' answers per step and never holds all the pairs.
   Only the prompt features ``X`` (n_prompts x d float32) are in memory.
3. Scores LLMs it has not seen from their answers on the reference prompts, and prints JSON
   (mean AUC of those LLMs on the other prompts).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's package, not another installed copy

from assessors.core.latent_stream import StreamingLatentAssessor
from assessors.data.loaders.open_llm_leaderboard_v2 import load_open_llm_leaderboard_v2
from assessors.data.semisynthetic import writing_answers
from assessors.metrics import per_llm_auc


def featurizer(name: str):
    """The project's featurizer ``conf/features/<name>.yaml`` (with its embedding cache)."""
    from hydra import compose, initialize_config_dir
    from hydra.utils import instantiate

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        return instantiate(compose("train", overrides=[f"features={name}"]).features)


def export_answers(res, llms: list[str], out_dir: Path, chunk: int) -> Path:
    """Answers of ``llms`` on all of ``res``' prompts, written ``chunk`` LLMs at a time."""
    with writing_answers(out_dir, len(res.instance_ids), len(llms)) as (_, answers):
        for s in range(0, len(llms), chunk):
            S = res.matrix(llms[s:s + chunk])  # (chunk, n_prompts): the only answers in memory
            answers[:, s:s + chunk] = np.where(np.isfinite(S), S, 255).T.astype(np.uint8)
    return out_dir


def run(res, out: Path, features: str = "minilm", new_llms: int = 10, chunk: int = 16, max_epochs: int = 60,
        seed: int = 0) -> dict:
    """Export ``res``' answers (all but ``new_llms`` LLMs) to ``out``, fit on them, score the others."""
    rng = np.random.default_rng(seed)
    llms = list(rng.permutation(res.llms))
    train_llms, new = llms[new_llms:], llms[:new_llms]
    answers = export_answers(res, train_llms, Path(out) / "answers", chunk)
    X = featurizer(features).fit_transform(res.prompts())
    ref = np.sort(rng.choice(len(X), size=min(100, len(X) // 3), replace=False))
    model = StreamingLatentAssessor(n_members=1, max_epochs=max_epochs, seed=seed).fit(X, answers, ref)
    # new LLMs: their reference answers in, predictions on the other prompts out
    S_new = res.matrix(new)
    rest = np.setdiff1d(np.arange(len(X)), ref)
    p = model.predict_proba(X[rest], S_new[:, ref])
    return {"train_llms": train_llms, "prompts": len(X), "training_pairs": int(model.n_pairs_),
            "epochs": model.members_[0]["epochs"], "best_epoch": model.members_[0]["best_epoch"],
            "new_llms": len(new), "new_llms_mean_auc": round(float(np.nanmean(per_llm_auc(S_new[:, rest], p))), 4),
            "answers": str(answers)}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="outputs/examples/stream", help="output directory")
    ap.add_argument("--subtasks", nargs="+", default=["bbh_navigate", "bbh_snarks", "bbh_sports_understanding"])
    ap.add_argument("--features", default="minilm", help="a conf/features/ config, e.g. minilm or unigram")
    ap.add_argument("--new-llms", type=int, default=10, help="LLMs left out of training, scored as new ones")
    ap.add_argument("--chunk", type=int, default=16, help="LLMs exported at a time")
    ap.add_argument("--max-epochs", type=int, default=60)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    summary = run(load_open_llm_leaderboard_v2(subtasks=args.subtasks), Path(args.out), args.features,
                  args.new_llms, args.chunk, args.max_epochs, args.seed)
    print(json.dumps({**summary, "train_llms": len(summary["train_llms"])}, indent=2))


if __name__ == "__main__":
    main()
