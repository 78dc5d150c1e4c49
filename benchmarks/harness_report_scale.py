"""The main process's share of a full benchmark-prediction run: the records of every job, gathered and reported.

A full run (16 benchmarks x 2 splits x 4 sizes x 100 trials x 13 methods) returns about 6.9 million
records from its 160 jobs. This script builds that many rows by resampling a real records file (a
harness checkpoint or a short run's records, parquet), as 160 job frames that go through pickle as
joblib returns them, concatenates them as the task does and runs the report
(:func:`assessors.estimation.harness_report.report`, tables written to a temporary folder). Prints
JSON: rows, peak RSS of this process and the CPU seconds of the report.

    python benchmarks/harness_report_scale.py RECORDS.parquet [--rows 6942000]
"""
from __future__ import annotations

import argparse
import json
import os
import pickle
import resource
import tempfile
import time

import numpy as np
import pandas as pd

from assessors.estimation import harness_report as rep


class _Folder:
    """A run logger that writes tables to a folder, as the task's run folder does, and drops the rest."""

    def __init__(self, folder: str):
        self.folder = folder

    def log_table(self, df, path):
        out = os.path.join(self.folder, os.path.basename(path))
        df.to_csv(out) if out.endswith(".csv") else df.to_parquet(out)

    def log_figure(self, fig, path):
        pass

    def log_metrics(self, metrics):
        pass

    def log_text(self, text, path):
        pass


def _job_frames(src: pd.DataFrame, rows: int, jobs: int = 160) -> list[pd.DataFrame]:
    """``jobs`` frames of ``rows / jobs`` resampled records each, string cells as separate objects."""
    frames = []
    for j in range(jobs):
        f = src.sample(rows // jobs, replace=True, random_state=j).reset_index(drop=True)
        f["benchmark"] = f["benchmark"] + str(j % 16)
        f["trial"] = f["trial"] + 10 * (j // 16)
        f["evidence"] = np.array(f["evidence"].tolist(), dtype=object)
        f["llm"] = [str(x) for x in f["llm"]]
        frames.append(pickle.loads(pickle.dumps(f)))
    return frames


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("records")
    ap.add_argument("--rows", type=int, default=6_942_000)
    args = ap.parse_args()
    frames = _job_frames(pd.read_parquet(args.records), args.rows)
    records = pd.concat(frames, ignore_index=True)
    del frames
    sim = pd.DataFrame({"benchmark": records["benchmark"].iloc[:1], "split": "interpolation", "trial": 0,
                        "llm": records["llm"].iloc[:1], "similarity": 0.5})
    t0 = time.process_time()
    with tempfile.TemporaryDirectory() as folder:
        rep.report(records, sim, _Folder(folder), 0.0)
    print(json.dumps({"rows": len(records), "report_cpu_s": round(time.process_time() - t0, 1),
                      "maxrss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6, 2),
                      "load": os.getloadavg()[0]}))


if __name__ == "__main__":
    main()
