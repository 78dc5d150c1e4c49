"""Registration time of an LLM (``POST /v1/llms`` with reference results) on the in-process server,
with the trust report about the reference prompts or about a candidate pool; prints JSON.

    python benchmarks/registration_trust_target.py <model uri> <tracking uri> none
    python benchmarks/registration_trust_target.py <model uri> <tracking uri> training:null   # the training pool, no cap
    python benchmarks/registration_trust_target.py <model uri> <tracking uri> files:1000      # every prompt file, cut to 1,000

The model is a ``python train.py assessor=latent`` run (``models:/<id>`` and its ``sqlite:///...``
store); 12 registrations of its training LLMs' reference results, median and each time.
``KNOWN=1`` also registers every known LLM at start-up; ``NO_PROMPT_OOD=1`` turns the model's
prompt-side signal off (``trust.posterior.prompt_ood: false``), to see what it costs.
"""
import glob
import json
import os
import statistics
import sys
import time

from fastapi.testclient import TestClient

from assessors.serving.app import create_app


def main() -> None:
    MODEL, TRACK = sys.argv[1], sys.argv[2]
    case = sys.argv[3]  # none | training:<max or null> | files:<max or null>
    settings = {"model_uri": MODEL, "tracking_uri": TRACK, "auth": {"enabled": False}, "precision": None,
                "data_dir": os.environ["ASSESSORS_DATA_DIR"], "cache_dir": os.path.expanduser("~/.cache/assessors"),
                "trust": {"enabled": True}}
    if case != "none":
        kind, mx = case.split(":")
        pool = "training" if kind == "training" else sorted(glob.glob(os.environ["ASSESSORS_DATA_DIR"] + "/open_llm_leaderboard_v2/prompts/*.csv"))
        settings["onboarding"] = {"pool": pool, "trust_target_max": None if mx == "null" else int(mx)}
    if os.environ.get("NO_PROMPT_OOD"):
        settings["trust"]["posterior"] = {"prompt_ood": False}
    if os.environ.get("KNOWN"):
        settings["known_llms"] = "all"
    app = create_app(settings)
    t0 = time.perf_counter()
    with TestClient(app, raise_server_exceptions=False) as c:
        while (h := c.get("/health")).json()["status"] == "starting":
            time.sleep(0.1)
        ready = time.perf_counter() - t0
        assert h.status_code == 200, h.text
        engine = app.state.engine
        model = engine.model
        ref_ids = c.get("/v1/reference").json()["reference_ids"]
        times, accs = [], []
        for k in range(12):
            vec = model.reference_success[k].tolist()
            t = time.perf_counter()
            r = c.post("/v1/llms", json={"name": f"llm{k}", "reference": [None if v != v else v for v in vec], "overwrite": True})
            times.append(time.perf_counter() - t)
            assert r.status_code in (200, 201), r.text
            accs.append(r.json()["trust"]["expected_accuracy"])
        tr = c.get("/v1/llms/llm0/trust").json()["trust"]
        print(json.dumps({"case": case, "ready_s": round(ready, 1), "n_llms": h.json()["n_llms"], "n_pool": (h.json().get("onboarding_pool") or {}).get("n_prompts"), "health_trust_target": h.json().get("trust_target"),
                          "register_s": [round(x, 3) for x in times], "median_s": round(statistics.median(times), 3),
                          "target": tr.get("target"), "prompt_ood": tr["policy"].get("prompt_ood"),
                          "prompt_ood_share": tr.get("prompt_ood_share"), "expected_accuracy": [round(a, 3) for a in accs]}))


if __name__ == "__main__":
    main()
