"""``predict.py mode=calibrate_task``: a real new BBH subtask calibrated on real answers of the tiny latent
model's training LLMs, logged and registered as a new MLflow model version, loaded back by its URI."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from assessors.errors import ConfigError, DataError

# an end-to-end MLflow run: logs and registers a model
pytestmark = pytest.mark.slow

TASK = "bbh_boolean_expressions"


@pytest.fixture(scope="module")
def task(data_dir, tiny_latent):
    from assessors.data.loaders.open_llm_leaderboard_v2 import load_open_llm_leaderboard_v2

    res = load_open_llm_leaderboard_v2(root=data_dir, subtasks=[TASK], download=False)
    prompts = data_dir / "open_llm_leaderboard_v2" / "prompts" / f"{TASK}_prompts.csv"
    ids = list(res.instance_ids)
    cal = ids[:30]
    llms = tiny_latent["train_llms"][:12]
    S = res.matrix(llms, cal)
    rows = [(llm, i, S[a, b]) for a, llm in enumerate(llms) for b, i in enumerate(cal)]
    return {"results": res, "prompts": prompts, "ids": ids, "cal": cal, "llms": llms,
            "answers": pd.DataFrame(rows, columns=["llm", "instance_id", "success"])}


def _cfg(compose, answers, prompts, extra=()):
    return compose(["mode=calibrate_task", f"calibrate_task.answers={answers}", f"calibrate_task.prompts=[{prompts}]",
                    *extra], config_name="predict")


def test_calibrated_model_is_logged_registered_and_scores_the_task(compose, tiny_latent, task, tmp_path):
    import mlflow.pyfunc

    from assessors.tasks.calibrate_task import run

    model = tiny_latent["model"]
    answers = tmp_path / "answers.csv"
    task["answers"].to_csv(answers, index=False)
    out = run(_cfg(compose, answers, task["prompts"], ["calibrate_task.register_as=tiny-task"]), model=model)
    assert out["calibrated"] == 30 and out["from_task"] == len(task["ids"]) - 30
    assert out["calibration_llms"] == 12 and out["registered"] == {"name": "tiny-task", "version": 1}
    loaded = mlflow.pyfunc.load_model("models:/tiny-task/1")
    texts = task["results"].prompts(task["ids"][30:60])
    llm = task["llms"][0]
    new = loaded.predict(pd.DataFrame({"prompt": texts}), params={"llm": llm})["p_success"].to_numpy()
    old = model.predict(None, pd.DataFrame({"prompt": texts}), {"llm": llm})["p_success"].to_numpy()
    assert np.abs(new - old).max() > 1e-3  # the task's prompts moved
    ref = tiny_latent["results"].prompts(tiny_latent["reference_ids"][:10])
    np.testing.assert_allclose(loaded.predict(pd.DataFrame({"prompt": ref}), params={"llm": llm})["p_success"],
                               model.predict(None, pd.DataFrame({"prompt": ref}), {"llm": llm})["p_success"], atol=1e-6)


def test_bad_calibration_answers_name_the_rows_and_the_fix(compose, tiny, tiny_latent, task, tmp_path):
    from assessors.tasks.calibrate_task import run

    def attempt(df, model=tiny_latent["model"]):
        path = tmp_path / "bad.csv"
        df.to_csv(path, index=False)
        return run(_cfg(compose, path, task["prompts"]), model=model)

    good = task["answers"]
    bad = good.copy()
    bad.loc[[2, 5], "llm"] = "no-such-llm"
    with pytest.raises(DataError, match=r"data rows \[3, 6\] \(2 of 360\) name LLMs this model was not trained on"):
        attempt(bad)
    bad = good.copy()
    bad.loc[4, "success"] = 0.7
    with pytest.raises(DataError, match=r"data rows \[5\].*other than 0, 1 or missing.*threshold"):
        attempt(bad)
    bad = good.copy()
    bad.loc[0, "instance_id"] = "bbh_navigate/0"
    with pytest.raises(DataError, match=r"data rows \[1\].*not among the task.s prompts"):
        attempt(bad)
    with pytest.raises(DataError, match=r"data rows \[361\].*repeat an \(llm, instance_id\) pair"):
        attempt(pd.concat([good, good.iloc[:1]]))
    with pytest.raises(ConfigError, match="assessor=latent"):
        attempt(good, model=tiny["model"])
    # too few answers per prompt: the adapted model says "prior only" for every prompt
    few = good[good["llm"].isin(task["llms"][:3])]
    out = attempt(few)
    assert out["prior_only"] == len(task["ids"]) and out["calibrated"] == 0
