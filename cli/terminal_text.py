"""Text for a terminal shown as it is: no character of it acts on the terminal or hides.

Published statements and answers are a model's text. Released exactly as the judge saw them,
they may still hold characters a terminal acts on (an ANSI escape conceals a word, a carriage
return overwrites a line) or that no reader sees (bidi overrides reorder it, zero-width
characters, tag letters and variation selectors vanish, yet a judge may read a word spelled in
them). Every view of the command line shows each one as its code (an ESC as backslash,
``u001b``; a character beyond the first plane as backslash, ``U000e006e``).

What hides is decided by Unicode's own classes, not a list of known tricks: controls (but tab
and newline), format characters (bidi controls, zero-width characters, tags, the soft hyphen),
line and paragraph separators, surrogates, private-use and unassigned code points, and the
remaining default-ignorable code points (fillers, variation selectors, the combining grapheme
joiner).
"""

from __future__ import annotations

import re
import unicodedata

_HIDDEN_CLASSES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
_IGNORABLE = re.compile(
    "[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u3164\ufe00-\ufe0f\uffa0\U000e0000-\U000e0fff]"
)
"""Default-ignorable code points outside the hidden classes (letters and marks no one sees)."""
_CANDIDATE = re.compile(r"[^\t\n\x20-\x7e]")
"""Every character but tab, newline and printable ASCII: only these are looked up."""


def hidden(char: str) -> bool:
    """Whether ``char`` acts on a terminal or shows nothing (tab and newline do neither)."""
    if char in "\t\n":
        return False
    return unicodedata.category(char) in _HIDDEN_CLASSES or bool(_IGNORABLE.fullmatch(char))


def _spell(char: str) -> str:
    point = ord(char)
    return f"\\u{point:04x}" if point <= 0xFFFF else f"\\U{point:08x}"


def spelled_out(text: str) -> str:
    """``text`` with every character no reader sees (:func:`hidden`) written as its code point."""
    return _CANDIDATE.sub(lambda m: _spell(m.group()) if hidden(m.group()) else m.group(), text)
