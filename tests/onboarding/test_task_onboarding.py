"""The checks and the prompt-side signal of task onboarding (``assessors/onboarding/task_onboarding.py``)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from assessors.errors import DataError
from assessors.onboarding.task_onboarding import Rows, adapted_prompt_ood, answer_matrix, require_enough

KNOWN = ["llm-a", "llm-b", "llm-c"]
IDS = ["t/0", "t/1", "t/2"]


def test_answers_become_rows_and_a_matrix_with_every_missing_form():
    df = pd.DataFrame({"llm": ["llm-c", "llm-c", "llm-a", "llm-a", "llm-a"],
                       "instance_id": ["t/2", "t/0", "t/0", "t/1", "t/2"],
                       "success": [1.0, None, 0, "", float("nan")]})
    rows, Y = answer_matrix(df, KNOWN, IDS, Rows("answers", 0))
    assert rows == [2, 0]
    np.testing.assert_array_equal(Y, [[np.nan, np.nan, 1.0], [0.0, np.nan, np.nan]])


@pytest.mark.parametrize("change, message", [
    ({"llm": ["nobody", "llm-a"]}, r"answers \[0\] \(1 of 2\) name LLMs this model was not trained on \(e.g. 'nobody'\)"),
    ({"success": [0.5, 1]}, r"answers \[0\] \(1 of 2\) have a success other than 0, 1 or missing"),
    ({"success": ["yes", 1]}, r"answers \[0\] .* other than 0, 1 or missing"),
    ({"instance_id": ["t/9", "t/0"]}, r"answers \[0\] .* ids not among the task's prompts"),
    ({"instance_id": ["t/0", "t/0"], "llm": ["llm-a", "llm-a"]}, r"answers \[1\] .* repeat an \(llm, instance_id\) pair"),
])
def test_bad_answers_name_their_rows(change, message):
    df = pd.DataFrame({"llm": ["llm-b", "llm-a"], "instance_id": ["t/1", "t/0"], "success": [1, 0], **change})
    with pytest.raises(DataError, match=message):
        answer_matrix(df, KNOWN, IDS, Rows("answers", 0))


def test_too_few_answers_name_the_prompts_and_the_fix():
    Y = np.array([[1.0, np.nan, 0.0], [0.0, np.nan, np.nan]])
    with pytest.raises(DataError, match=r"no prompt has 3 \(prompts \[0, 2\] have \{'t/0': 2, 't/2': 1\}\).*lower min_answers"):
        require_enough(Y, 3, IDS, Rows("prompts", 0))
    require_enough(Y, 2, IDS, Rows("prompts", 0))  # t/0 has 2


def test_calibrated_prompts_join_the_prompt_side_signal():
    from assessors.trust.prompt_ood import PromptOOD

    rng = np.random.default_rng(0)
    train = rng.standard_normal((300, 8)).astype(np.float32)
    train[:, 0] = 0.0  # the training prompts never point along the first axis; the task's do
    ood = PromptOOD().fit(train[:200], train[200:])
    task = (rng.standard_normal((60, 8)) * 0.1 + 6.0 * np.eye(8)[0]).astype(np.float32)  # all alike, far from training
    assert ood.share(task) == 1.0
    adapted = adapted_prompt_ood(ood, task[:10])
    assert adapted.share(task[10:]) < 0.1 and adapted.threshold_ == ood.threshold_
    assert ood.share(task) == 1.0 and len(ood.index_) == 200  # the trained signal is left as it was
    assert adapted_prompt_ood(None, task) is None and adapted_prompt_ood(ood, task[:0]) is ood


def test_a_sparse_calibrated_task_is_familiar_and_another_task_is_not():
    """30 calibrated prompts of a widely spread task: indexing them beside the dense training prompts
    leaves most of the task beyond the training threshold; judged by the calibrated prompts' own spread,
    the rest of the task is familiar, a second new task is not, and a pickled copy gives the same distances."""
    import copy
    import pickle

    from assessors.trust.prompt_ood import PromptOOD

    rng = np.random.default_rng(0)
    train = rng.standard_normal((2000, 8)).astype(np.float32)
    train[:, :2] = 0.0
    ood = PromptOOD().fit(train[:1500], train[1500:])

    def task(axis: int, n: int) -> np.ndarray:
        t = rng.standard_normal((n, 8)).astype(np.float32)
        t[:, :2] = 0.0
        t[:, axis] += 3.0
        return t

    new, other = task(0, 400), task(1, 200)
    union_only = copy.copy(ood)
    union_only.index_, union_only._nn = np.vstack([ood.index_, new[:30].astype(np.float16)]), None
    assert union_only.share(new[30:]) > 0.5
    adapted = adapted_prompt_ood(ood, new[:30])
    assert adapted.share(new[30:]) < 0.25 and adapted.share(other) == 1.0
    assert adapted.summary()["n_calibrated"] == 30
    np.testing.assert_allclose(pickle.loads(pickle.dumps(adapted)).distance(new), adapted.distance(new))
    few = adapted_prompt_ood(ood, new[:3])  # too few to measure their spread: only indexed
    assert few.cal_threshold_ is None and np.array_equal(few.distance(other), ood.distance(other))
