"""What a training run logs and prints: per-LLM tables, figures, reference ids."""
from __future__ import annotations

import logging
import re

import numpy as np
import pandas as pd

log = logging.getLogger(__name__)

#: Column order after the headline (the configured assessor as served) and its raw predictions.
METHOD_ORDER = ["paper_generic", "specific", "all_train_data", "reference_only", "random_selector"]
#: The per-LLM table shows every test LLM up to this many, else its head and the mean.
MAX_ROWS = 20
HEAD_ROWS = 10


def metric_key(method: str) -> str:
    """A method's name in metric keys (what MLflow accepts): ``latent (served)`` -> ``latent_served``."""
    return re.sub(r"\W+", "_", method).strip("_")


def summarise(long: pd.DataFrame, headline: str = "generic",
              raw: str | None = None) -> tuple[pd.DataFrame, dict[str, float]]:
    """Per-LLM AUC table (rows test LLMs, cols methods: ``headline`` first, then ``raw``) and mean
    metrics per method.

    The summary names each mean ``<metric>/<method>`` (:func:`metric_key`); the headline method's are also
    ``<metric>/headline`` (a key that stays the same whichever assessor is configured) and its wins
    ``headline_wins_vs/<other>``.
    """
    from assessors.reporting.tables import per_llm_table

    auc = per_llm_table(long, metric="auc", mean_row=False)
    first = [headline, raw] + METHOD_ORDER
    auc = auc[[m for m in first if m in auc.columns] + [m for m in auc.columns if m not in first]]
    means = long.groupby(["method", "metric"])["value"].mean()
    summary = {f"{metric}/{metric_key(method)}": float(v) for (method, metric), v in means.items()}
    summary.update({f"{metric}/headline": float(v) for (method, metric), v in means.items() if method == headline})
    if headline in auc.columns:
        for other in auc.columns.drop(headline):
            summary[f"headline_wins_vs/{metric_key(other)}"] = float((auc[headline] > auc[other]).sum())
    summary["n_test_llms"] = float(len(auc))
    for method, names in undefined_auc(auc).items():
        summary[f"n_llms_scored/{metric_key(method)}"] = float(len(auc) - len(names))
    return auc, summary


def served_summary(served: pd.DataFrame) -> dict[str, float]:
    """Metrics of what was served (``served/*``): test LLMs given a fallback, and of those whose served
    accuracy band exists, how many hold their accuracy on the test prompts."""
    out = {"served/n_fallback": float((served["served"] != "assessor").sum())}
    banded = served["in_band"].dropna()
    if len(banded):
        out["served/n_with_band"] = float(len(banded))
        out["served/accuracy_in_band"] = float(banded.astype(bool).mean())
    return out


def undefined_auc(auc: pd.DataFrame) -> dict[str, list[str]]:
    """Per method, the test LLMs whose AUC is undefined (constant success on the test items).

    They are left out of every mean; callers name them so the mean is never silently partial.
    """
    return {m: auc.index[auc[m].isna()].astype(str).tolist() for m in auc.columns if auc[m].isna().any()}


def exclusion_notes(validation: dict | None, auc: pd.DataFrame) -> list[str]:
    """Lines saying what the headline means leave out (flagged data blocks, LLMs without an AUC).

    ``validation`` is the load-time validation report as a dict (``Results.meta["validation"]``).
    """
    notes = []
    report = validation or {}
    if report.get("flagged"):
        from assessors.data.validate import Issue, ValidationReport

        rep = ValidationReport(report["data"], report["n_llms"], report["n_instances"],
                               [Issue(**i) for i in report["issues"]], report["flagged"], report.get("excluded"))
        notes.append(f"Validation: {rep.flagged_text()}")
    for method, names in undefined_auc(auc).items():
        notes.append(f"{method}: AUC undefined for {len(names)} test LLM(s) with constant success on the test "
                     f"items, excluded from the mean row: {', '.join(names)}")
    return notes


def report_run(run, long: pd.DataFrame, preds: dict[str, np.ndarray], S_test: np.ndarray, generic,
               reference_ids: list[str], validation: dict | None = None,
               plots: bool = True, headline: str = "generic", raw: str | None = None,
               served: pd.DataFrame | None = None) -> tuple[dict[str, float], pd.DataFrame, list[str]]:
    """Log a training run's metrics, tables, reference ids and figures to ``run``.

    Parameters
    ----------
    run : RunLogger
    long : DataFrame
        ``llm, method, metric, value`` on the test LLMs x test instances.
    preds : dict of str to ndarray of shape (n_test_llms, n_test)
        P(success) of each method.
    S_test : ndarray of shape (n_test_llms, n_test)
        Test successes (NaN where ungraded).
    generic : fitted generic assessor
    reference_ids : list of str
    validation : dict, optional
        The load-time validation report (what flagged blocks were left out).
    plots : bool
        Log the AUC bar chart, ROC curves and reliability diagram.
    headline : str
        The configured assessor's column in ``preds`` (as served).
    raw : str, optional
        Its column before any trust verdict.
    served : DataFrame, optional
        Per test LLM what was served (:func:`~assessors.tasks.served.served_table`): logged as
        ``tables/served_per_llm.{csv,md}``, summarised in ``served/*`` metrics.

    Returns
    -------
    summary : dict of str to float
        Mean metrics per method (``auc/<method>``, ``auc/headline`` etc.: :func:`summarise`).
    auc : DataFrame
        Per-LLM AUC table (rows test LLMs, columns methods).
    notes : list of str
        What the means leave out.
    """
    from assessors.reporting import plots as plot_fns
    from assessors.reporting.tables import to_markdown

    auc, summary = summarise(long, headline, raw)
    if served is not None:
        summary.update(served_summary(served))
        run.log_table(served, "tables/served_per_llm.csv")
        run.log_text(to_markdown(served), "tables/served_per_llm.md")
    notes = exclusion_notes(validation, auc)
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
    run.log_dict({"reference_ids": list(reference_ids)}, "reference_ids.json")
    if getattr(generic, "selection_", None) is not None:
        run.log_table(generic.selection_, "tables/generic_model_selection.csv")
    run.log_params({"generic.selected_classifier": generic.classifier_name_})
    if plots:
        pooled = {m: (S_test[~np.isnan(S_test)], P[~np.isnan(S_test)]) for m, P in preds.items()}
        figs = {
            "plots/auc_by_method.png": plot_fns.auc_by_method_bar(auc),
            "plots/roc_curves.png": plot_fns.roc_curves(pooled),
            "plots/reliability.png": plot_fns.reliability_diagram(pooled),
        }
        import matplotlib.pyplot as plt

        for path, fig in figs.items():
            run.log_figure(fig, path)
            plt.close(fig)
    return summary, auc, notes


def print_report(auc: pd.DataFrame, notes: list[str], summary: dict[str, float], classifier_name: str,
                 location: str, headline: str = "generic", raw: str | None = None,
                 served: pd.DataFrame | None = None) -> None:
    """Print the per-LLM AUC table (its head when more than :data:`MAX_ROWS` LLMs, and the mean row),
    the notes (shortened: the full text is in the run's tables), the test LLMs given a fallback, the
    calibration of the headline (and of ``raw``) and where the run is tracked."""
    from assessors.reporting.console import shorten
    from assessors.reporting.tables import to_markdown

    shown = auc.sort_values(auc.columns[0], ascending=False)
    head = len(shown) > MAX_ROWS
    if head:
        shown = shown.head(HEAD_ROWS).copy()
    shown.loc["mean"] = auc.mean(axis=0)
    print(f"\nTest AUC per LLM ({'the best ' + str(HEAD_ROWS) + ' of ' if head else ''}{len(auc)} test LLMs; "
          f"columns: methods; full table in tables/auc_per_llm.md)\n")
    print(to_markdown(shown))
    for note in notes:
        print(shorten(note, where="tables/excluded.txt"))
    if served is not None:
        print(served_lines(served))
    key = metric_key(headline)
    if f"ece/{key}" in summary:
        line = (f"\n{headline}: mean test AUC {summary[f'auc/{key}']:.3f}, ECE {summary[f'ece/{key}']:.3f}, "
                f"Brier {summary[f'brier/{key}']:.3f}, log loss {summary[f'log_loss/{key}']:.3f}")
        r = metric_key(raw) if raw else None
        if r and f"ece/{r}" in summary:
            line += f"; {raw}: AUC {summary[f'auc/{r}']:.3f}, ECE {summary[f'ece/{r}']:.3f}"
        print(f"{line}; classifier {classifier_name}")
    print(f"MLflow: {location}")


def served_lines(served: pd.DataFrame) -> str:
    """What was served, in a few lines: the test LLMs given a fallback (a table) and how many test LLMs'
    served accuracy band holds their accuracy on the test prompts."""
    from assessors.reporting.tables import to_markdown

    moved = served[served["served"] != "assessor"]
    lines = [f"\nServed: {len(served) - len(moved)} of {len(served)} test LLMs by the assessor"
             + (f", {len(moved)} by the fallback of their trust verdict:" if len(moved) else "")]
    if len(moved):
        cols = ["verdict", "served", "auc_served", "auc_raw", "ece_served", "ece_raw", "accuracy", "band_low", "band_high"]
        lines.append(to_markdown(moved[cols]))
    banded = served["in_band"].dropna()
    if len(banded):
        lines.append(f"Served accuracy band holds the test accuracy for {int(banded.astype(bool).sum())} of "
                     f"{len(banded)} test LLMs (full table: tables/served_per_llm.md)")
    return "\n".join(lines)
