"""Per-item confidence from the token logprobs a chat-completions endpoint returns.

Definitions (both in [0, 1]):

* ``label`` -- when the grader reads the answer as a pick from a closed label set
  (:meth:`assessors.onboarding.graders.Grader.choice`), the confidence is the normalised
  probability of the chosen label among the labels, read at the answer token where the
  chosen label begins::

      conf = P(chosen) / sum_l P(l),  P(l) = sum of exp(logprob) over that position's
                                       top_logprobs alternatives that spell a prefix of l

  An alternative counts for label ``l`` when, after the text it shares with the sampled
  token before the label start and after stripping spaces/brackets/punctuation and case,
  it is a non-empty prefix of ``l`` (or ``l`` followed by punctuation) and of no other
  label. Labels absent from the top-k get probability 0, so ``top_logprobs`` should be at
  least the number of labels.
* ``sequence`` -- otherwise (open answers, or the label token cannot be located):
  ``exp(mean token logprob)`` over the completion tokens, the geometric-mean token
  probability of the answer.

Tokens are given as a list of ``(token_text, logprob, {alt_text: logprob})`` tuples in
completion order (the OpenAI ``choices[0].logprobs.content`` list).
"""
from __future__ import annotations

import math
from typing import Sequence

from assessors.onboarding.graders import Choice

Token = tuple[str, float, dict]
_STRIP = " \t\r\n.,;:!?\"'`*()[]{}<>-_▁Ġ"


def _norm(text: str) -> str:
    return text.strip(_STRIP).lower()


def _label_of(piece: str, labels: Sequence[str]) -> str | None:
    """The single label that ``piece`` starts (or spells completely), else None."""
    p = _norm(piece)
    if not p:
        return None
    hits = []
    for lab in labels:
        n = _norm(lab)
        if n.startswith(p) or (p.startswith(n) and not p[len(n):len(n) + 1].isalnum()):
            hits.append(lab)
    return hits[0] if len(hits) == 1 else None


def label_confidence(tokens: Sequence[Token], choice: Choice) -> float | None:
    """Normalised probability of ``choice.label`` among ``choice.options`` (see module doc).

    Returns None when the label's token cannot be located or no alternative names the
    chosen label (the caller then falls back to :func:`sequence_confidence`).
    """
    pos = 0
    for text, logprob, top in tokens:
        end = pos + len(text)
        if pos <= choice.start < end or (end == choice.start and not text):
            cut = choice.start - pos
            head = text[:cut]
            mass: dict[str, float] = {}
            alts = dict(top or {})
            alts.setdefault(text, logprob)
            for alt, lp in alts.items():
                if lp is None or not math.isfinite(lp):
                    continue
                # an alternative only competes if it shares the text before the label
                # (e.g. "(" in "(B"); otherwise read it whole
                piece = alt[cut:] if cut and alt.startswith(head) else alt
                lab = _label_of(piece, choice.options)
                if lab is not None:
                    mass[lab] = mass.get(lab, 0.0) + math.exp(lp)
            total = sum(mass.values())
            if choice.label not in mass or total <= 0:
                return None
            return float(min(1.0, mass[choice.label] / total))
        pos = end
    return None


def sequence_confidence(tokens: Sequence[Token]) -> float | None:
    """``exp(mean logprob)`` of the completion tokens; None without tokens."""
    lps = [lp for _, lp, _ in tokens if lp is not None and math.isfinite(lp)]
    if not lps:
        return None
    return float(math.exp(sum(lps) / len(lps)))


def item_confidence(tokens: Sequence[Token] | None, choice: Choice | None) -> tuple[float | None, str | None]:
    """Confidence and its kind (``"label"``, ``"sequence"`` or None without logprobs)."""
    if not tokens:
        return None, None
    if choice is not None:
        conf = label_confidence(tokens, choice)
        if conf is not None:
            return conf, "label"
    conf = sequence_confidence(tokens)
    return (conf, "sequence") if conf is not None else (None, None)
