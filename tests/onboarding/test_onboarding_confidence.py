"""Confidence from token logprobs (fast, synthetic token lists)."""
from __future__ import annotations

import math

import pytest

from assessors.onboarding.confidence import item_confidence, label_confidence, sequence_confidence
from assessors.onboarding.graders import Choice, MultipleChoiceLetter

L = math.log


def test_label_confidence_normalises_over_labels_only():
    tokens = [("(", L(0.99), {"(": L(0.99)}),
              ("B", L(0.6), {"B": L(0.6), "A": L(0.3), "C": L(0.05), "The": L(0.05)}),
              (")", L(0.9), {})]
    conf = label_confidence(tokens, Choice("B", 1, ("A", "B", "C")))
    assert conf == pytest.approx(0.6 / 0.95)


def test_label_confidence_merges_spellings_and_shared_prefix():
    # the label starts inside the token " (B": alternatives sharing " (" are read after it,
    # others whole; " Yes"/"Yes"/"yes" style variants add up
    tokens = [(" (B", L(0.5), {" (B": L(0.5), " (A": L(0.2), " A": L(0.1), " (": L(0.2)})]
    assert label_confidence(tokens, Choice("B", 2, ("A", "B"))) == pytest.approx(0.5 / 0.8)
    yes = [("Yes", L(0.5), {"Yes": L(0.5), " Yes": L(0.1), "No": L(0.3), "yes": L(0.1)})]
    assert label_confidence(yes, Choice("Yes", 0, ("Yes", "No"))) == pytest.approx(0.7 / 1.0)


def test_label_confidence_subword_labels():
    # "invalid" tokenised as "in"+"valid": "in" is a prefix of invalid only
    tokens = [("in", L(0.7), {"in": L(0.7), "valid": L(0.2), "val": L(0.1)}), ("valid", L(0.99), {})]
    assert label_confidence(tokens, Choice("invalid", 0, ("valid", "invalid"))) == pytest.approx(0.7)


def test_label_confidence_ambiguous_or_missing():
    # alternative "Ma" starts both labels: ignored, not split
    tokens = [("Mack", L(0.4), {"Mack": L(0.4), "Ma": L(0.4), "Ana": L(0.2)})]
    assert label_confidence(tokens, Choice("Mackenzie", 0, ("Mackenzie", "Mark", "Ana"))) == pytest.approx(0.4 / 0.6)
    assert label_confidence(tokens, Choice("Ana", 99, ("Mackenzie", "Ana"))) is None  # past the end


def test_sequence_and_item_confidence():
    tokens = [("8", L(0.5), {}), (".", L(0.8), {})]
    assert sequence_confidence(tokens) == pytest.approx(math.sqrt(0.4))
    assert item_confidence(tokens, None) == (pytest.approx(math.sqrt(0.4)), "sequence")
    assert item_confidence(None, None) == (None, None)
    assert item_confidence([], Choice("A", 0, ("A",))) == (None, None)
    # label found -> label kind; label position not found -> sequence fallback
    mc = [("A", L(0.25), {"A": L(0.25), "B": L(0.75)})]
    assert item_confidence(mc, Choice("A", 0, ("A", "B"))) == (pytest.approx(0.25), "label")
    assert item_confidence(mc, Choice("A", 5, ("A", "B")))[1] == "sequence"


def test_grader_choice_locates_label_in_tokens():
    prompt = "Q\nOptions:\n(A) x\n(B) y"
    answer = "The answer is (B)."
    toks = ["The", " answer", " is", " (", "B", ")."]
    tokens = [(t, L(0.9), {}) for t in toks]
    tokens[4] = ("B", L(0.8), {"B": L(0.8), "A": L(0.2)})
    ch = MultipleChoiceLetter().choice(answer, prompt=prompt)
    assert item_confidence(tokens, ch) == (pytest.approx(0.8), "label")
