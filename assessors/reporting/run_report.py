"""What a training run logs and prints: per-LLM tables, figures, reference ids, the model."""
from __future__ import annotations

import logging
import shlex
from pathlib import Path

import numpy as np
import pandas as pd

from assessors.tags import capability

log = logging.getLogger(__name__)

METHOD_ORDER = ["generic", "specific", "all_train_data", "reference_only", "random_selector"]


def summarise(long: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, float]]:
    """Per-LLM AUC table (rows test LLMs, cols methods) and mean metrics per method."""
    from assessors.reporting.tables import per_llm_table

    auc = per_llm_table(long, metric="auc", mean_row=False)
    auc = auc[[m for m in METHOD_ORDER if m in auc.columns] + [m for m in auc.columns if m not in METHOD_ORDER]]
    means = long.groupby(["method", "metric"])["value"].mean()
    summary = {f"{metric}/{method}": float(v) for (method, metric), v in means.items()}
    if "generic" in auc.columns:
        for other in auc.columns.drop("generic"):
            summary[f"generic_wins_vs/{other}"] = float((auc["generic"] > auc[other]).sum())
    summary["n_test_llms"] = float(len(auc))
    for method, names in undefined_auc(auc).items():
        summary[f"n_llms_scored/{method}"] = float(len(auc) - len(names))
    return auc, summary


def undefined_auc(auc: pd.DataFrame) -> dict[str, list[str]]:
    """Per method, the test LLMs whose AUC is undefined (constant success on the test items).

    They are left out of every mean; callers name them so the mean is never silently partial.
    """
    return {m: auc.index[auc[m].isna()].astype(str).tolist() for m in auc.columns if auc[m].isna().any()}


def exclusion_notes(prep, auc: pd.DataFrame) -> list[str]:
    """Lines saying what the headline means leave out (flagged data blocks, LLMs without an AUC)."""
    notes = []
    report = prep.results.meta.get("validation") or {}
    if report.get("flagged"):
        from assessors.data.validate import Issue, ValidationReport

        rep = ValidationReport(report["data"], report["n_llms"], report["n_instances"],
                               [Issue(**i) for i in report["issues"]], report["flagged"], report.get("excluded"))
        notes.append(f"Validation: {rep.flagged_text()}")
    for method, names in undefined_auc(auc).items():
        notes.append(f"{method}: AUC undefined for {len(names)} test LLM(s) with constant success on the test "
                     f"items, excluded from the mean row: {', '.join(names)}")
    return notes


def report_run(cfg, run, prep, preds: dict[str, np.ndarray], fitted: dict, long: pd.DataFrame) -> dict[str, float]:
    from assessors.reporting import plots
    from assessors.reporting.tables import to_markdown

    auc, summary = summarise(long)
    notes = exclusion_notes(prep, auc)
    summary.update({f"time/{k}": float(v) for k, v in prep.timings.items()})
    summary["objective"] = summary.get("auc/generic", float("nan"))
    run.log_metrics(summary)
    run.log_table(long, "tables/metrics_long.csv")
    wide = long.pivot_table(index="llm", columns=["metric", "method"], values="value")
    wide.columns = [f"{m}/{meth}" for m, meth in wide.columns]
    run.log_table(wide, "tables/per_llm_metrics.csv")
    run.log_text(to_markdown(auc) + "".join(f"\n\n{n}" for n in notes), "tables/auc_per_llm.md")
    if notes:
        run.log_text("\n".join(notes) + "\n", "tables/excluded.txt")
        undefined = undefined_auc(auc)
        if undefined:
            run.set_tags({"metrics.auc_undefined_llms": ",".join(sorted({m for v in undefined.values() for m in v}))[:5000]})
    run.log_dict({"reference_ids": list(fitted["reference_ids"])}, "reference_ids.json")
    gen = fitted["generic"]
    if getattr(gen, "selection_", None) is not None:
        run.log_table(gen.selection_, "tables/generic_model_selection.csv")
    run.log_params({"generic.selected_classifier": gen.classifier_name_})
    if cfg.get("plots", True):
        S_te = prep.S("test", "test")
        pooled = {m: (S_te[~np.isnan(S_te)], P[~np.isnan(S_te)]) for m, P in preds.items()}
        figs = {
            "plots/auc_by_method.png": plots.auc_by_method_bar(auc),
            "plots/roc_curves.png": plots.roc_curves(pooled),
            "plots/reliability.png": plots.reliability_diagram(pooled),
        }
        import matplotlib.pyplot as plt

        for path, fig in figs.items():
            run.log_figure(fig, path)
            plt.close(fig)
    command = None
    if getattr(getattr(cfg, "tracking", None), "log_model", False) and not capability(prep.featurizer, "uses_results"):
        from assessors.core.pyfunc import log_assessor_model

        uri = log_assessor_model(run, gen, prep.featurizer, fitted["reference_ids"],
                                 prep.results.matrix(prep.llms["train"], fitted["reference_ids"]),
                                 prep.llms["train"], example_prompts=prep.results.prompts(prep.inst["test"][:2]),
                                 trust_model=fitted.get("trust_model"))
        if uri:
            run.set_tags({"model_uri": uri})
            log.info("model logged: %s", uri)
            command = predict_command(cfg, uri, example_prompts(cfg, prep, run.run_id))
    print("\nTest AUC per LLM (rows: test LLMs; columns: methods)\n")
    shown = auc.sort_values(auc.columns[0], ascending=False)
    shown.loc["mean"] = auc.mean(axis=0)
    print(to_markdown(shown))
    for note in notes:
        print(f"\n{note}")
    for m in ("generic",):
        if f"ece/{m}" in summary:
            print(f"{m}: ECE {summary[f'ece/{m}']:.3f}, Brier {summary[f'brier/{m}']:.3f}, "
                  f"log loss {summary[f'log_loss/{m}']:.3f}; selected classifier {gen.classifier_name_}")
    print(f"\nMLflow: {run.location}\n")
    if command:
        print(f"Score held-out prompts with this model (P(success) of each training LLM):\n  {command}\n")
        run.log_text(command + "\n", "predict_command.txt")
    return summary


def example_prompts(cfg, prep, run_id: str | None, n: int = 20) -> Path:
    """Write ``n`` held-out test prompts (``id, prompt``) for the printed ``predict.py`` command."""
    from assessors.io import atomic_write

    ids = list(prep.inst["test"][:n])
    df = pd.DataFrame({"id": ids, "prompt": prep.results.prompts(ids)})
    path = Path(cfg.paths.outputs).resolve() / "predict" / f"prompts_{run_id or 'example'}.csv"
    return atomic_write(path, lambda tmp: df.to_csv(tmp, index=False))


def predict_command(cfg, model_uri: str, prompts: Path) -> str:
    """The exact ``predict.py`` command that scores ``prompts`` with the model logged at ``model_uri``.

    It names the MLflow store explicitly (the same absolute path or server that ``conf/tracking``
    gave train.py), so it works from any working directory.
    """
    script = Path(__file__).resolve().parents[2] / "predict.py"
    if not script.exists():  # installed without the repository's entry points
        script = Path("predict.py")
    elif script.parent == Path.cwd().resolve():
        script = Path("predict.py")
    args = ["mode=score", f"model_uri={model_uri}", f"prompts={prompts}", "known_llms=all"]
    tracking = cfg.tracking
    if tracking.get("tracking_uri"):
        args.append(f"tracking.tracking_uri={tracking.tracking_uri}")
    else:
        outputs = Path(cfg.paths.outputs).resolve()
        args.append(f"paths.outputs={outputs}")
        db = Path(tracking.db_path).resolve()
        if db != outputs / "mlflow.db":
            args.append(f"tracking.db_path={db}")
    return " ".join(["python", shlex.quote(str(script))] + [shlex.quote(a) for a in args])
