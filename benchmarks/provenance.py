"""What every benchmark result carries (the commit, date and machine it was measured on) and how it is written."""
from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def provenance() -> dict:
    """``commit`` (short hash of the checkout), ``date`` (UTC), ``machine`` (cores) and the load average now.

    Read it before long runs: it names the code this process runs.
    """
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    return {"commit": commit, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "machine": f"{os.cpu_count()} cores, shared", "load_average": os.getloadavg()}


def emit(result: dict, out: Path | None = None) -> None:
    """Print ``result`` as JSON and, with ``out``, write the same text there."""
    text = json.dumps(result, indent=1, default=str)
    if out:
        Path(out).write_text(text)
    print(text)
