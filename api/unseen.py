"""Text for a terminal shown as it is: no character of it acts on the terminal or hides.

Published statements and answers are a model's text. Released exactly as the judge saw them,
they may still hold characters a terminal acts on (an ANSI escape conceals a word, a carriage
return overwrites a line) or that no reader sees (bidi overrides reorder it, zero-width
characters vanish). Every view of the command line shows each one as its code
(an ESC as backslash, ``u001b``).
"""

from __future__ import annotations

import re

UNSEEN = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f"  # controls but tab and newline: ESC starts ANSI codes
    "\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]"  # bidi, zero-width
)


def spelled_out(text: str) -> str:
    """``text`` with every character of :data:`UNSEEN` written as its code point."""
    return UNSEEN.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
