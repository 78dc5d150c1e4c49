"""``experiment=mdad``: MDAD of micro-benchmarks (:mod:`assessors.estimation.mdad`) on the configured benchmarks."""
from __future__ import annotations

import numpy as np
from hydra.utils import instantiate
from threadpoolctl import threadpool_limits

from assessors.estimation import mdad
from assessors.tasks.wrapper import task_wrapper


def execute(cfg, run_) -> dict[str, float]:
    """Agreement curves and MDAD per configured benchmark, selector and estimator."""
    h = cfg.mdad
    estimators = {k: instantiate(v) for k, v in (cfg.get("estimators") or {}).items()}
    edges = np.arange(0, float(h.max_diff) + 1e-9, float(h.bucket_width))
    metrics, md = {}, ["# MDAD: pairwise ranking agreement of micro-benchmarks", ""]
    with threadpool_limits(1):
        for name, c in h.benchmarks.items():
            res = instantiate(c)
            selectors = {k: (None if v is None else instantiate(v)) for k, v in (h.get("selectors") or {"random": None}).items()}
            curves, summary = mdad.evaluate(res.success, estimators, list(h.sizes), int(h.trials), edges,
                                            int(h.n_boot), bool(h.get("progress", True)), selectors,
                                            h.get("selector_trials"))
            run_.log_table(curves, f"tables/{name}_agreement.csv")
            run_.log_table(summary, f"tables/{name}_mdad.csv")
            for p, fig in mdad._plots(curves, summary, name).items():
                run_.log_figure(fig, p)
            for _, r in summary.iterrows():
                metrics[f"{name}.{r['selector']}.{r['method']}.mdad.n{r['size']}"] = float(r["mdad"])
            md += [f"## {name} ({res.success.shape[0]} LLMs x {res.success.shape[1]} items)", "",
                   "MDAD in accuracy points (NaN: agreement never reaches 0.8 within the buckets).", "",
                   summary.assign(label=mdad._label(summary)).pivot(index="size", columns="label", values="mdad")
                   .round(2).to_markdown(), ""]
    run_.log_metrics({k: v for k, v in metrics.items() if np.isfinite(v)})
    run_.log_text("\n".join(md), "mdad_report.md")
    return metrics


run = task_wrapper("mdad")(execute)
