"""Graders and the subgroup -> grader mapping (fast, no server)."""
from __future__ import annotations

import pytest

from assessors.errors import ConfigError, DataError
from assessors.onboarding.grader_map import GraderMap
from assessors.onboarding.graders import (ExactMatch, MultipleChoiceLetter, NumberedChoice, NumericAnswer,
                                          StartsWithOption, final_answer, last_number, normalize)

MC_PROMPT = "What is the date tomorrow?\nOptions:\n(A) 12/11/1937\n(B) 12/25/1937\n(C) 01/04/1938"
MUSR_PROMPT = "A story.\n\nWho is the most likely murderer?\n\n1 - Mackenzie\n2 - Ana\nAnswer:"


def test_normalize_and_final_answer():
    assert normalize("  The  ANSWER.\n") == "the  answer".replace("  ", " ")
    assert final_answer("Let me think.\nSo the answer is: False.")[0] == "False."
    assert final_answer("Yes\nbecause ...")[0] == "Yes"
    assert last_number("I count 3 apples and eight pears.") == 8.0
    assert last_number("1,024 items") == 1024.0
    assert last_number("none") is None


@pytest.mark.parametrize("answer,ok", [
    ("(B)", True), ("B", True), ("B) 12/25/1937", True), ("The answer is B.", True),
    ("First (C)... no, the answer is (B)", True), ("12/25/1937", True),
    ("(A)", False), ("A cat", False), ("", False), (None, False), ("I don't know", False),
])
def test_multiple_choice_letter(answer, ok):
    assert MultipleChoiceLetter().grade(answer, "(B)", prompt=MC_PROMPT) is ok


def test_multiple_choice_letter_options_and_bad_target():
    g = MultipleChoiceLetter()
    got = g.choice("The answer is (C)", prompt=MC_PROMPT)
    assert got.label == "C" and got.options == ("A", "B", "C") and "The answer is (C)"[got.start] == "C"
    assert g.choice("(Z)", prompt=MC_PROMPT) is None  # not an offered option
    assert not MultipleChoiceLetter(match_option_text=False).grade("12/25/1937", "(B)", prompt=MC_PROMPT)
    with pytest.raises(DataError, match="not an option letter"):
        g.grade("(B)", "twelve", prompt=MC_PROMPT)


@pytest.mark.parametrize("answer,target,ok", [
    ("False", "False", True), ("false.", "False", True), ("The answer is: False", "False", True),
    ("False because not True", "False", False), ("True", "False", False), ("invalid", "valid", False),
    ("Valid", "valid", True), ("yes", "yes", True),
])
def test_exact_match(answer, target, ok):
    assert ExactMatch().grade(answer, target) is ok


def test_exact_match_choice():
    g = ExactMatch(labels=["valid", "invalid"])
    assert g.choice("  Invalid.") == ("valid"[:0] + "invalid", 2, ("valid", "invalid"))
    assert g.choice("maybe") is None
    assert ExactMatch().choice("valid") is None  # no label set -> open answer


@pytest.mark.parametrize("answer,ok", [
    ("8", True), ("You have 8 musical instruments.", True), ("eight", True), ("8.0", True),
    ("3 + 5 = 9", False), ("many", False),
])
def test_numeric(answer, ok):
    assert NumericAnswer().grade(answer, "8") is ok


def test_numeric_tolerance_and_bad_target():
    assert NumericAnswer(abs_tol=0.1).grade("3.14", "3.1")
    assert not NumericAnswer().grade("3.14", "3.1")
    with pytest.raises(DataError):
        NumericAnswer().grade("3", "n/a")


def test_starts_with_option_follows_openai_evals_match():
    g = StartsWithOption(options=["Yes", "No"])
    assert g.grade("Yes, because the ball...", "Yes")
    assert g.grade("  Yes", "Yes")  # stripped
    assert not g.grade("yes", "Yes")  # evals Match is case-sensitive
    assert StartsWithOption(options=["Yes", "No"], ignore_case=True).grade("yes", "Yes")
    assert not g.grade("No", "Yes")
    assert not g.grade("I think Yes", "Yes")
    assert StartsWithOption().grade("Yes", '["Yes"]')  # evals `ideal` lists
    assert g.choice("No.") == ("No", 0, ("Yes", "No"))


@pytest.mark.parametrize("answer,ok", [
    ("1", True), ("Answer: 1", True), ("Mackenzie", True), ("Mackenzie, clearly", True),
    ("2", False), ("Ana", False), ("The butler", False),
])
def test_numbered_choice(answer, ok):
    assert NumberedChoice().grade(answer, "Mackenzie", prompt=MUSR_PROMPT) is ok


def test_grader_map_resolution():
    mc, num, yes, dflt = MultipleChoiceLetter(), NumericAnswer(), ExactMatch(labels=["Yes", "No"]), ExactMatch()
    gm = GraderMap({"*bbh_*": mc, "*object_counting": num, "bbh_navigate": yes}, default=dflt)
    assert gm.for_subgroup("bbh_date_understanding") is mc
    assert gm.for_subgroup("bbh_object_counting") is num  # more specific glob wins over order
    assert gm.for_subgroup("object_counting") is num
    assert gm.for_subgroup("BBH_Navigate") is yes  # exact, case-insensitive
    assert gm.for_subgroup("other") is dflt and gm.for_subgroup(None) is dflt
    with pytest.raises(ConfigError, match="no grader matches subgroup 'other'"):
        GraderMap({"*bbh_*": mc}).for_subgroup("other")
    with pytest.raises(ConfigError, match="not a Grader"):
        GraderMap({"x": "exact"})


def test_default_config_grades_every_real_subtask(data_dir):
    """Every BBH/MuSR prompt file and both openai_evals datasets get a grader, and the
    grader accepts the reference target as a correct answer of its own."""
    import os

    import pandas as pd
    from hydra import compose, initialize_config_dir
    from hydra.utils import instantiate

    conf = os.path.join(os.path.dirname(__file__), "..", "..", "conf")
    with initialize_config_dir(os.path.abspath(conf), version_base=None):
        gm = instantiate(compose(config_name="onboarding/default").onboarding.graders)
    files = sorted((data_dir / "open_llm_leaderboard_v2" / "prompts").glob("*_prompts.csv"))
    assert len(files) == 27
    for f in files:
        df = pd.read_csv(f, dtype=str, keep_default_na=False).head(5)
        g = gm.for_subgroup(f.stem.removesuffix("_prompts"))
        for _, r in df.iterrows():
            assert g.grade(r["target"], r["target"], prompt=r["prompt"]), (f.name, r["id"], type(g).__name__)
    assert isinstance(gm.for_subgroup("causal_judgment"), StartsWithOption)
    assert isinstance(gm.for_subgroup("bbh_causal_judgement"), ExactMatch)
