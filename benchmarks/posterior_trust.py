"""Trust report on the latent posterior, evaluated on held-out test LLMs; prints JSON.

Per seed and split (the latent assessor of ``train.py assessor=latent``, fitted as in
``benchmarks/adaptive_onboarding.py`` and shared through its model cache), each test LLM is described
by its answers on ``--questions`` random training prompts (the random reference set of train.py).
The report's thresholds, band widening and fallback are chosen on the split's *validation* LLMs
(their reports about the validation prompts; :class:`ValidatedTrustPolicy`, conf/trust/validated_policy.yaml),
the prompt-side out-of-distribution threshold on the validation prompts; the test LLMs' reports are then
compared with what happened on the test prompts:

* each policy below is scored on what the serving path serves every test LLM under it
  (:func:`~assessors.trust.posterior_eval.served_outcomes`: ``PosteriorTrustPolicy.serve``);
* a *failure* is a test LLM whose latent AUC falls below the "reference only" fallback's on its
  own answers, or whose realised accuracy lies outside the predicted 90% band;
* recall = failures flagged ``out of population`` or ``uncertain``; false alarms = flagged LLMs
  that did not fail, over flagged LLMs;
* coverage of the expected-AUC and accuracy bands; mean AUC with and without the fallback on the
  LLMs it switches (and on the others).

``validated`` is the policy chosen on validation LLMs with the prompt-side signal,
``validated_no_prompt_ood`` the same without it, ``validated_no_quiet_rule`` the policy chosen without
its quiet rule (``quiet_flags=false``: no flag muted, ``max_width`` as chosen before it),
``previous_defaults`` the report's fixed defaults with the reference-only fallback on every ``out of
population`` verdict. The fallback for prompts unlike the training prompts is the one ``train.py`` chooses
on held-out groups of training prompts (``ood_fallback``, with each candidate's mean validation AUC);
``validated_reference_only_ood`` is the validated policy with the previous ``reference_only`` there.
Each LLM's ``served_auc_band`` is the band a report gives for what it is served (the fallback's band on
held-out subtasks when it applies one to such prompts), with its coverage.

    nice python benchmarks/posterior_trust.py --seeds 0
    nice python benchmarks/posterior_trust.py --seeds 0 -- llm_split=frontier
    nice python benchmarks/posterior_trust.py --seeds 0 --degenerate   # the all-zero population

``--degenerate`` rebuilds the split from the shared data: the test LLMs are the strongest, the
training and validation LLMs the rest, and every validation LLM and all but the strongest
``--keep`` fraction of training LLMs have their results set to 0 (LLMs that failed every item).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def degenerate_prepare(keep: float) -> None:
    """Patch ``assessors.tasks.prepare.prepare`` to build the degenerate population (see the module docstring)."""
    import adaptive_onboarding

    import assessors.tasks.prepare as pipeline

    real = pipeline.prepare
    if adaptive_onboarding.MODEL_CACHE:  # the cache key does not know about the patch: a directory of its own
        adaptive_onboarding.MODEL_CACHE = str(Path(adaptive_onboarding.MODEL_CACHE) / f"degenerate_keep{keep}")

    def prepare(cfg):
        prep = real(cfg)
        res = prep.results
        names = prep.llms["train"] + prep.llms["val"] + prep.llms["test"]
        order = sorted(names, key=lambda n: float(np.nanmean(res.success[res.llms.index(n)])))
        n_test, n_val = len(prep.llms["test"]), len(prep.llms["val"])
        rest = order[:-n_test]
        rng = np.random.default_rng(int(cfg.seed))
        val = sorted(rng.choice(rest, n_val, replace=False).tolist())
        train = [n for n in rest if n not in val]  # weakest first
        n_keep = int(round(keep * len(train)))
        for n in train[:len(train) - n_keep] + val:
            res.success[res.llms.index(n)] = np.where(np.isnan(res.success[res.llms.index(n)]), np.nan, 0.0)
        prep.llms = {"train": train, "val": val, "test": order[-n_test:]}
        return prep

    pipeline.prepare = prepare


def _given(prep, part: str, idx, X_target, S_target) -> tuple:
    """``llm_outcomes``' / ``served_outcomes``' data arguments for the ``part`` LLMs (answers on the reference
    prompts ``idx``)."""
    return prep.X["train"][idx], prep.S(part, "train")[:, idx], X_target, S_target, prep.llms[part]


def run_seed(seed: int, overrides: list[str], n_questions: int) -> dict:
    from adaptive_onboarding import fixed_selector, fitted
    from hydra.utils import instantiate

    from assessors.tasks.train_trust import fit_prompt_ood, trust_part, with_ood_fallback
    from assessors.tasks.trust_eval import verdict_scores
    from assessors.trust.posterior_eval import fit_validated, llm_outcomes, served_outcomes
    from assessors.trust.posterior_policy import PosteriorTrustPolicy

    cfg, prep, model, _ = fitted(seed, overrides)
    idx = fixed_selector(cfg, "random", n_questions, prep)
    ood = fit_prompt_ood(cfg, prep, model)  # what train.py stores with the model
    part = trust_part(prep)  # the validation prompts, or those trust.holdout_prompts kept out of the fit
    known = {"training_answers": prep.S("train", "train")[:, idx]}
    val_reps, val_outs = llm_outcomes(model, *_given(prep, "val", idx, prep.X[part], prep.S("val", part)),
                                      prompt_ood=ood, seed=seed, **known)
    chooser = fit_validated(instantiate(cfg.trust.validated_policy), val_reps, val_outs)
    loud = fit_validated(instantiate(cfg.trust.validated_policy, quiet_flags=False), val_reps, val_outs)
    ood_choice = with_ood_fallback(cfg, prep, {"options": {}}, ood)["ood_fallback"]  # what train.py stores
    test = _given(prep, "test", idx, prep.X["test"], prep.S("test", "test"))

    def served(opts, ood_fallback=ood_choice["choice"], prompt_ood=ood, outcomes=False):
        """What the serving path serves the test LLMs under these options (with what happened to them)."""
        policy = PosteriorTrustPolicy(**opts, ood_fallback=ood_fallback, ood_auc_bands=ood_choice.get("auc_band"),
                                      ood_accuracy_bands=ood_choice.get("accuracy_error_band"), prompt_ood=prompt_ood,
                                      seed=seed)
        return served_outcomes(policy, model, *test, outcomes=outcomes, **known)

    validated = served(chooser.options(), outcomes=True)  # one pass: the outcomes under its slope prior
    outs = [s.pop("outcome") for s in validated]

    def scored(*args, **kwargs):
        """The test LLMs scored on what the serving path serves them under these options."""
        return verdict_scores(served(*args, **kwargs), outs)

    # the previous default: the report's fixed thresholds, the reference-only fallback on every out-of-population verdict
    previous = {"fallback_kind": "reference_only", "fallback_flags": None}
    return {
        "seed": seed, "n_val_llms": len(val_reps), "n_test_llms": len(outs), "chosen": chooser.options(),
        "chosen_by": chooser.chosen_by_, "validation": {"n_failures": chooser.n_failures_,
                                                         "n_out_of_population": chooser.n_triggered_,
                                                         "coverage": chooser.coverage_, "losses": chooser.losses_,
                                                         "slope_losses": chooser.slope_losses_},
        "prompt_ood_threshold": ood.threshold_, "ood_fallback": ood_choice,
        "validated": verdict_scores(validated, outs),
        "validated_reference_only_ood": scored(chooser.options(), ood_fallback="reference_only"),
        "validated_no_prompt_ood": scored(chooser.options(), prompt_ood=None),
        "validated_no_quiet_rule": scored(loud.options()),
        "previous_defaults": scored(previous, prompt_ood=None),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--questions", type=int, default=100)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--degenerate", action="store_true", help="most training and every validation LLM all-zero")
    ap.add_argument("--keep", type=float, default=0.2, help="with --degenerate: training LLMs kept (the strongest)")
    ap.add_argument("overrides", nargs="*")
    a = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if a.degenerate:
        degenerate_prepare(a.keep)
    runs = [run_seed(s, a.overrides, a.questions) for s in a.seeds]
    summary = {"overrides": a.overrides, "questions": a.questions, "degenerate": a.degenerate and {"keep": a.keep},
               "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                        text=True).stdout.strip(),
               "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": f"{os.cpu_count()} cores, shared",
               "runs": runs}
    text = json.dumps(summary, indent=1, default=str)
    if a.out:
        a.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
