"""Tokens of evidence text: where an excerpt may start and end (design §10.1).

A number keeps its sign, decimal part, exponent and unit; an identifier its joining characters;
a grapheme cluster is never split. One rule, :func:`inside_a_token`, shared by the
EvidenceGuard, the audit verifier and the offline model (which widens its quotes with
:func:`whole_tokens`). Pure functions of the text: no normalisation happens here (callers
compare normalised text, see :func:`domain.grounding.normalise`).
"""

from __future__ import annotations

import unicodedata
from typing import Final

ZWJ: Final = "\u200d"
JOINERS: Final = frozenset("._-/:+")
"""Characters that join the word characters on both sides into one token: ``0.97``, ``db.pool``,
``pricing-service``, ``3/3``, ``10:05:00Z``, ``1e-3``, ``1e+3``."""
SIGNS: Final = frozenset("-+\u2212.")
"""Characters that belong to the number they directly precede when they start a token: ``-40ms``,
``+3``, ``.5``."""
UNITS: Final = frozenset("%\u2030")
"""Signs that belong to the number they directly follow: ``97%``."""


def _continues(char: str) -> bool:
    """Whether ``char`` continues the grapheme cluster before it (it never starts a token)."""
    point = ord(char)
    return (
        unicodedata.category(char).startswith("M")  # combining marks, enclosing keycaps
        or char == ZWJ
        or 0xFE00 <= point <= 0xFE0F  # variation selectors
        or 0xE0100 <= point <= 0xE01EF  # variation selectors supplement
        or 0x1F3FB <= point <= 0x1F3FF  # emoji skin-tone modifiers
        or 0xE0020 <= point <= 0xE007F  # emoji tag sequences (subdivision flags)
    )


def _regional(char: str) -> bool:
    return 0x1F1E6 <= ord(char) <= 0x1F1FF  # two of them make one flag


def _word(char: str | None) -> bool:
    return char is not None and (char.isalnum() or char == "_")


def _base(text: str, end: int) -> int:
    """Index of the last character before ``end`` that starts a grapheme cluster, or -1."""
    at = end - 1
    while at >= 0 and _continues(text[at]):
        at -= 1
    return at


def inside_a_token(text: str, at: int) -> bool:
    """Whether ``at``, the place between ``text[at - 1]`` and ``text[at]``, is inside a token.

    The one token rule of design §10.1, shared by the EvidenceGuard, the verifier and the
    offline model. Only the ends of ``text`` and the places below are *not* inside a token:

    - a grapheme cluster is never split: nothing ends before a combining mark, a zero-width
      joiner, a variation selector or an emoji modifier, nor right after a zero-width joiner,
      nor between the two halves of a flag;
    - word characters (letters, digits, ``_``) that touch are one token (``30s``, ``v2``);
    - one of :data:`JOINERS` between two word characters joins them (``0.97``, ``3/3``,
      ``pricing-service``, ``2026-11-29T10:05:00Z``, ``1e-3``); a ``.`` or ``:`` before a space
      or the end is punctuation, so ``after 30s`` is whole in ``after 30s.``;
    - a sign (:data:`SIGNS`) that starts a token belongs to the digit after it (``-40ms``), a
      unit (:data:`UNITS`) to the digit before it (``97%``).
    """
    if at <= 0 or at >= len(text):
        return False
    after = text[at]
    if _continues(after) or text[at - 1] == ZWJ:
        return True
    if _regional(text[at - 1]) and _regional(after):
        return True
    left_at = _base(text, at)
    if left_at < 0:
        return False
    left = text[left_at]
    before_left = text[_base(text, left_at)] if _base(text, left_at) >= 0 else None
    after_next = text[at + 1] if at + 1 < len(text) else None
    return (
        (_word(left) and _word(after))
        or (after in JOINERS and _word(left) and _word(after_next))
        or (left in JOINERS and _word(before_left) and _word(after))
        or (left in SIGNS and after.isdigit() and not _word(before_left))
        or (after in UNITS and left.isdigit())
    )


def cuts_a_token(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` begins or ends inside a token of ``text``."""
    return inside_a_token(text, start) or inside_a_token(text, end)


def whole_tokens(text: str, start: int, end: int) -> tuple[int, int]:
    """The smallest ``(start, end)`` around ``text[start:end]`` that cuts no token."""
    while inside_a_token(text, start):
        start -= 1
    while inside_a_token(text, end):
        end += 1
    return start, end
