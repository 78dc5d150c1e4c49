"""What widening the accuracy band of out-of-population LLMs to their fallback's level would do; prints JSON.

Reads the JSON of ``benchmarks/posterior_trust.py`` runs (``--out``) and re-scores their test LLMs
with one change: the accuracy band of an LLM judged ``out of population`` also spans the fallback's
level, its mean prediction on the target prompts plus or minus the binomial sampling error of the
LLM's ``n_answered`` answers at the band's level. Failures are re-derived as the benchmark derives
them (latent AUC below reference only, or realised accuracy outside the band).

    python benchmarks/trust_accuracy_band.py runs/trust_*.json runs/rb_loo_*.json
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from scipy.stats import norm


def widened(row: dict, level: float) -> bool:
    """Whether the row's realised accuracy is inside the band widened to the fallback's level."""
    if row["accuracy_in_band"] or row["verdict"] != "out of population":
        return bool(row["accuracy_in_band"])
    kind = row["fallback"] if row["fallback"] != "latent" else "releveled"
    m, n = row[f"mean_{kind}"], max(int(row["n_answered"]), 1)
    half = norm.ppf(0.5 + level / 2) * np.sqrt(max(m * (1 - m), 1e-6) / n)
    return bool(m - half <= row["realised_accuracy"] <= m + half)


def score(rows: list[dict], inside: list[bool]) -> dict:
    flagged = np.array([r["verdict"] != "ok" for r in rows])
    fail = np.array([r["auc_latent"] < r["auc_reference_only"] or not i for r, i in zip(rows, inside)])
    return {"n_llms": len(rows), "accuracy_band_coverage": float(np.mean(inside)), "n_failures": int(fail.sum()),
            "n_flagged": int(flagged.sum()), "recall": float(flagged[fail].mean()) if fail.any() else None,
            "false_alarms": int((flagged & ~fail).sum()),
            "false_alarm_rate": float((~fail[flagged]).mean()) if flagged.any() else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", type=Path, nargs="+", help="posterior_trust.py --out files")
    ap.add_argument("--level", type=float, default=0.9)
    a = ap.parse_args()
    rows = [r for f in a.files for run in json.loads(f.read_text())["runs"] for r in run["validated"]["llms"]]
    missing = [f for f in ("mean_releveled", "n_answered") if rows and f not in rows[0]]
    if missing:
        raise SystemExit(f"these runs predate {missing}: re-run benchmarks/posterior_trust.py")
    print(json.dumps({"files": [str(f) for f in a.files],
                      "as_reported": score(rows, [bool(r["accuracy_in_band"]) for r in rows]),
                      "widened_to_the_fallback_level": score(rows, [widened(r, a.level) for r in rows])}, indent=1))


if __name__ == "__main__":
    main()
