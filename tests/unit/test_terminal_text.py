"""A terminal shows a published statement's every character: none acts on it or hides."""

from __future__ import annotations

import pytest

from cli.terminal_text import spelled_out

HIDDEN = [
    "\x1b",  # ESC: starts ANSI codes
    "\r",
    "\u202e",  # right-to-left override
    "\u2067",  # right-to-left isolate
    "\u200b",  # zero-width space
    "\u00ad",  # soft hyphen
    "\u034f",  # combining grapheme joiner
    "\u115f",  # Hangul choseong filler
    "\u3164",  # Hangul filler
    "\u180e",  # Mongolian vowel separator
    "\u2028",  # line separator
    "\u2029",  # paragraph separator
    "\ufe0f",  # variation selector 16
    "\U000e0100",  # variation selector 17 (can carry hidden bytes)
    "\U000e006e",  # tag letter n: invisible "ASCII smuggling"
    "\U000e0001",  # language tag
    "\ufff9",  # interlinear annotation anchor
    "\U0001d173",  # musical symbol begin beam (format)
    "\ue000",  # private use
    "\U000f0000",  # supplementary private use
    "\u0378",  # unassigned
]


@pytest.mark.parametrize("char", HIDDEN, ids=[f"U+{ord(c):04X}" for c in HIDDEN])
def test_a_character_no_reader_sees_is_spelled_out(char: str) -> None:
    shown = spelled_out(f"Checkout is{char} healthy")
    assert char not in shown
    assert shown.casefold().startswith("checkout is\\u") and shown.endswith(" healthy")


def test_visible_text_tabs_newlines_and_accents_are_kept() -> None:
    text = "Café naïve résumé\tcheckout\n“timeout” 97% 日本語 e\u0301 👍"
    assert spelled_out(text) == text


def test_tag_letters_spelling_a_hidden_word_are_each_shown() -> None:
    hidden = "".join(chr(0xE0000 + ord(c)) for c in "not")
    assert spelled_out(f"Checkout is {hidden}healthy") == (
        "Checkout is \\U000e006e\\U000e006f\\U000e0074healthy"
    )
