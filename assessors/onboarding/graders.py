"""Graders: decide whether an LLM's free-text answer is correct.

One small base, :class:`Grader`, with one abstract method ``grade(answer, target) -> bool``
and one optional hook, :meth:`Grader.choice`, that reads the answer as a pick from a
closed label set (used to compute a label confidence from logprobs, see
:mod:`assessors.onboarding.confidence`). Which grader applies to which dataset/subtask is
configuration (``conf/onboarding/default.yaml``, resolved by
:class:`assessors.onboarding.grader_map.GraderMap`).

Graders may use the prompt (e.g. to read the option letters or the numbered options a
question offers), so ``grade`` and ``choice`` take an optional ``prompt`` keyword.
"""
from __future__ import annotations

import abc
import json
import math
import re
import unicodedata
from typing import NamedTuple, Sequence

from assessors.errors import DataError


class Choice(NamedTuple):
    """An answer read as one label out of a closed set.

    Attributes
    ----------
    label : str
        The chosen label, spelled as in ``options``.
    start : int
        Character offset in the answer where the label begins (locates the answer token).
    options : tuple of str
        All labels the question allows (e.g. ``("A", "B", "C")`` or ``("Yes", "No")``).
    """

    label: str
    start: int
    options: tuple[str, ...]


_PUNCT = " \t\r\n.,;:!?\"'`*()[]{}<>"
# "the answer is X", "Answer: X", "final answer: X" -- the last one wins because small
# models often restate the question's wording before concluding.
_ANSWER_IS = re.compile(r"(?:final\s+)?answer\s*(?:is|:)\s*:?\s*", re.IGNORECASE)


def normalize(text: str) -> str:
    """Lower-case, NFKC, collapse whitespace and strip surrounding punctuation/quotes."""
    text = unicodedata.normalize("NFKC", str(text)).lower()
    return " ".join(text.split()).strip(_PUNCT)


def final_answer(answer: str) -> tuple[str, int]:
    """The span of ``answer`` that states the final answer, and its start offset.

    Text after the last "answer is"/"Answer:" up to the end of that line; otherwise the
    first non-empty line.
    """
    hits = list(_ANSWER_IS.finditer(answer))
    if hits:
        start = hits[-1].end()
    else:
        start = len(answer) - len(answer.lstrip())
    end = answer.find("\n", start)
    end = len(answer) if end < 0 else end
    return answer[start:end], start


class Grader(abc.ABC):
    """Decides correctness of one answer; subclasses implement :meth:`grade`."""

    @abc.abstractmethod
    def grade(self, answer: str, target: str, prompt: str | None = None) -> bool:
        """True when ``answer`` (model output) is correct for ``target`` (reference)."""

    def choice(self, answer: str, prompt: str | None = None) -> Choice | None:
        """The answer read as a pick from a closed label set, or None (open answers)."""
        return None

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({args})"


def _as_list(target) -> list[str]:
    """Targets may be a string, a list, or a JSON list string (OpenAI evals ``ideal``)."""
    if isinstance(target, (list, tuple)):
        return [str(t) for t in target]
    text = str(target)
    if text.startswith("[") and text.endswith("]"):
        try:
            val = json.loads(text)
            if isinstance(val, list):
                return [str(t) for t in val]
        except json.JSONDecodeError:
            pass
    return [text]


class ExactMatch(Grader):
    """Normalised exact match of the final answer against the target.

    Parameters
    ----------
    labels : sequence of str, optional
        Closed label set (e.g. ``["True", "False"]``); when given, :meth:`choice` reports
        the label the answer names so a label confidence can be computed.
    """

    def __init__(self, labels: Sequence[str] | None = None):
        self.labels = labels

    def grade(self, answer, target, prompt=None):
        if answer is None:
            return False
        text, _ = final_answer(str(answer))
        got = {normalize(text), normalize(answer)}
        return any(normalize(t) in got for t in _as_list(target))

    def choice(self, answer, prompt=None):
        if not self.labels or answer is None:
            return None
        text, start = final_answer(str(answer))
        norm = normalize(text)
        for lab in self.labels:
            if normalize(lab) == norm:
                # offset of the label's first character inside the final-answer span
                pos = text.lower().find(normalize(lab)[:1])
                return Choice(str(lab), start + max(pos, 0), tuple(map(str, self.labels)))
        return None


_OPTION_LINE = re.compile(r"^\s*\(([A-Z])\)\s*(.*?)\s*$", re.MULTILINE)


class MultipleChoiceLetter(Grader):
    """Multiple-choice letter: "(B)", "B", "B)", "the answer is B" or the option's text.

    The option letters (and texts) are read from the prompt's ``(A) ...`` lines; without a
    prompt any capital letter counts. Targets look like ``"(B)"`` or ``"B"``.

    Parameters
    ----------
    match_option_text : bool
        Also accept an answer that repeats an option's text instead of its letter.
    """

    def __init__(self, match_option_text: bool = True):
        self.match_option_text = match_option_text

    def grade(self, answer, target, prompt=None):
        m = re.fullmatch(r"\s*\(?([A-Za-z])\)?\s*", str(target))
        if m is None:
            raise DataError(f"MultipleChoiceLetter: target {target!r} is not an option letter like '(B)'")
        got = self.choice(answer, prompt)
        return got is not None and got.label == m.group(1).upper()

    def choice(self, answer, prompt=None):
        if answer is None:
            return None
        answer = str(answer)
        options = dict(_OPTION_LINE.findall(prompt or ""))
        letters = "".join(options) or "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
        cls = f"[{letters}]"
        labels = tuple(letters)
        patterns = (  # most explicit first
            rf"answer\s*(?:is|:)\s*:?\s*\(?({cls})(?![A-Za-z])",
            rf"\(({cls})\)",
            # a bare leading letter only when it stands alone ("B", "B)", "B.") -- not the article in "A cat"
            rf"^\s*({cls})(?:[).:,]|[ \t]*$)",
        )
        for i, pat in enumerate(patterns):
            hits = list(re.finditer(pat, answer, flags=re.MULTILINE if i == 2 else 0))
            if hits:
                hit = hits[-1] if i == 0 else hits[0]
                return Choice(hit.group(1), hit.start(1), labels)
        if self.match_option_text and options:
            low = answer.lower()
            found = [(low.find(t.lower()), -len(t), k) for k, t in options.items() if t and t.lower() in low]
            if found:
                pos, _, letter = min(found)
                return Choice(letter, pos, labels)
        return None


_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?|-?\.\d+")
_WORDS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
          "fifteen sixteen seventeen eighteen nineteen twenty").split()
_WORD_NUM = re.compile(r"\b(" + "|".join(_WORDS) + r")\b", re.IGNORECASE)


def last_number(text: str) -> float | None:
    """The last number in ``text`` (digits, or a number word up to twenty), else None."""
    hits = [(m.end(), m.group()) for m in _NUMBER.finditer(text)]
    hits += [(m.end(), str(_WORDS.index(m.group().lower()))) for m in _WORD_NUM.finditer(text)]
    if not hits:
        return None
    raw = max(hits)[1].replace(",", "")
    try:
        return float(raw)
    except ValueError:
        return None


class NumericAnswer(Grader):
    """The last number in the answer equals the target within tolerance.

    Parameters
    ----------
    abs_tol, rel_tol : float
        Tolerances passed to :func:`math.isclose`.
    """

    def __init__(self, abs_tol: float = 1e-6, rel_tol: float = 0.0):
        self.abs_tol = abs_tol
        self.rel_tol = rel_tol

    def grade(self, answer, target, prompt=None):
        want = last_number(str(target))
        if want is None:
            raise DataError(f"NumericAnswer: target {target!r} contains no number")
        if answer is None:
            return False
        # prefer the stated final answer; fall back to the whole text
        got = last_number(final_answer(str(answer))[0])
        if got is None:
            got = last_number(str(answer))
        return got is not None and math.isclose(got, want, abs_tol=self.abs_tol, rel_tol=self.rel_tol)


class StartsWithOption(Grader):
    """OpenAI evals ``Match``: correct when the answer starts with an expected option.

    As in ``evals.api.record_and_check_match``: the picked option is the first of
    ``options`` (default: the expected targets) that the answer starts with; the answer is
    correct when the picked option is one of the targets.

    Parameters
    ----------
    options : sequence of str, optional
        All admissible options (e.g. ``["Yes", "No"]``); also the label set for confidence.
    ignore_case : bool
        Compare case-insensitively (evals is case-sensitive: default False).
    strip : bool
        Strip leading/trailing whitespace from the answer first.
    """

    def __init__(self, options: Sequence[str] | None = None, ignore_case: bool = False, strip: bool = True):
        self.options = options
        self.ignore_case = ignore_case
        self.strip = strip

    def _pick(self, answer: str, options: Sequence[str]) -> tuple[str, int] | None:
        lead = len(answer) - len(answer.lstrip()) if self.strip else 0
        text = answer.strip() if self.strip else answer
        fold = (lambda s: s.lower()) if self.ignore_case else (lambda s: s)
        for opt in options:
            if fold(text).startswith(fold(str(opt))):
                return str(opt), lead
        return None

    def grade(self, answer, target, prompt=None):
        if answer is None:
            return False
        expected = _as_list(target)
        picked = self._pick(str(answer), list(self.options or expected))
        fold = (lambda s: s.lower()) if self.ignore_case else (lambda s: s)
        return picked is not None and fold(picked[0]) in {fold(e) for e in expected}

    def choice(self, answer, prompt=None):
        if not self.options or answer is None:
            return None
        picked = self._pick(str(answer), list(self.options))
        return None if picked is None else Choice(picked[0], picked[1], tuple(map(str, self.options)))


_NUMBERED = re.compile(r"^\s*(\d+)\s*-\s*(.+?)\s*$", re.MULTILINE)


class NumberedChoice(Grader):
    """MuSR-style numbered options (``1 - Mackenzie``) with the option text as target.

    The answer may give the number ("2", "Answer: 2") or the option's text; the earliest
    explicit reading wins. Without a prompt, falls back to normalised containment.
    """

    def grade(self, answer, target, prompt=None):
        if answer is None:
            return False
        options = dict(_NUMBERED.findall(prompt or ""))
        if not options:
            return normalize(str(target)) in normalize(str(answer))
        got = self.choice(answer, prompt)
        text = None if got is None else options.get(got.label, got.label)
        return text is not None and normalize(text) == normalize(str(target))

    def choice(self, answer, prompt=None):
        options = dict(_NUMBERED.findall(prompt or ""))
        if answer is None or not options:
            return None
        answer = str(answer)
        labels = tuple(options)
        nums = "|".join(map(re.escape, labels))
        for pat in (rf"answer\s*(?:is|:)\s*:?\s*({nums})\b", rf"^\s*({nums})\b"):
            hits = list(re.finditer(pat, answer, flags=re.IGNORECASE))
            if hits:
                return Choice(hits[-1].group(1), hits[-1].start(1), labels)
        low = answer.lower()
        found = [(low.find(t.lower()), -len(t), k) for k, t in options.items() if t.lower() in low]
        if found:
            pos, _, k = min(found)
            # the label set is then the option texts' positions; report the number as the
            # label but locate the text, so confidence compares option texts' first tokens
            return Choice(options[k], pos, tuple(options.values()))
        return None
