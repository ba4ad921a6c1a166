"""Every fast path and cache of the run's pure-Python work gives what the plain code gave.

Each test below holds the code as it was before it was made cheaper (the reference) and checks
the fast version against it, over every code point where that is possible and over random
text otherwise, with the characters the fast paths branch on made likely.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from datetime import UTC, datetime

from hypothesis import example, given
from hypothesis import strategies as st

from application.audit.records import type_of
from application.storable import REPLACEMENT, storable_json, storable_text
from application.transcodings import EnumAsValue
from domain.catalogue import ALL_ENUMS, EVENT_CLASSES, event_type_name
from domain.grounding import (
    DEFAULT_RULES,
    STOP_WORDS,
    GroundingRules,
    _is_content_word,
    normalise,
    occurs,
    restates,
)
from domain.tokens import cuts_a_token
from infrastructure.ops_scope import utc_text

# -- the references: the code as it was ---------------------------------------------------------

_WHITESPACE = re.compile(r"\s+")
_WORD = re.compile(r"\w+")
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def normalise_before(text: str) -> str:
    return unicodedata.normalize("NFC", _WHITESPACE.sub(" ", text).strip())


def content_word_before(word: str) -> bool:
    return sum(ch.isalpha() for ch in word) >= 2 and word.casefold() not in STOP_WORDS


def weakness_before(rules: GroundingRules, excerpt: str) -> str | None:
    text = normalise_before(excerpt)
    words = _WORD.findall(text)
    if len(words) < rules.min_words:
        return f"{len(words)} words; an excerpt needs {rules.min_words} or more"
    solid = sum(1 for ch in text if not ch.isspace())
    if solid < rules.min_chars:
        return f"{solid} characters; an excerpt needs {rules.min_chars} or more"
    if not any(content_word_before(word) for word in words):
        return "only digits, punctuation or common words"
    return None


def plain_before(text: str) -> str:
    return " ".join(_WORD.findall(unicodedata.normalize("NFKC", text).casefold()))


def restates_before(statement: str, other: str) -> bool:
    a, b = plain_before(statement), plain_before(other)
    if not a or not b:
        return False
    if a == b or b in a or (a in b and len(a) >= len(b) // 2):
        return True
    said = {w for w in b.split() if content_word_before(w)}
    kept = said & {w for w in a.split() if content_word_before(w)}
    return len(said) >= 3 and len(kept) >= 0.8 * len(said)


def type_name_before(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper()


# -- random text rich in what the fast paths branch on -------------------------------------------

SPACES = "".join(chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace())
SPECIAL = st.sampled_from([*SPACES, "\x00", "\ud800", "\udfff", "é", "Ж", "_", "-", ".", "7"])
TEXT = st.one_of(
    st.text(st.one_of(st.characters(), SPECIAL, st.sampled_from("abcXYZ ")), max_size=60),
    st.text(st.characters(max_codepoint=127), max_size=60),  # ASCII, NUL and all
)
WORDS = st.lists(
    st.one_of(st.sampled_from(sorted(STOP_WORDS)), st.text(min_size=1, max_size=8)), max_size=12
)


def test_the_whitespace_of_split_is_the_whitespace_of_the_pattern() -> None:
    # normalise relies on str.split cutting at exactly what \s matches: every code point checked
    assert all(bool(_WHITESPACE.fullmatch(ch)) == ch.isspace() for ch in map(chr, range(0x110000)))


@given(TEXT)
def test_normalise_is_the_substitution(text: str) -> None:
    assert normalise(text) == normalise_before(text)


@given(TEXT, TEXT)
def test_occurs_with_the_cached_content_is_the_plain_check(excerpt: str, content: str) -> None:
    for _ in range(2):  # the second time the content's normalised form comes from the cache
        needle = normalise_before(excerpt)
        assert occurs(excerpt, content) == (bool(needle) and _uncut(needle, content))


def _uncut(needle: str, content: str) -> bool:
    """Whether the needle occurs anywhere in the plainly normalised content cutting no token."""
    text = normalise_before(content)
    found = (m.start() for m in re.finditer(f"(?={re.escape(needle)})", text))
    return any(not cuts_a_token(text, at, at + len(needle)) for at in found)


@given(st.one_of(TEXT, st.builds(" ".join, WORDS)), st.integers(0, 6), st.integers(0, 30))
def test_weakness_is_the_plain_rule(excerpt: str, min_words: int, min_chars: int) -> None:
    for rules in (DEFAULT_RULES, GroundingRules(min_words, min_chars)):
        assert rules.weakness(excerpt) == weakness_before(rules, excerpt)


@given(st.one_of(st.sampled_from(sorted(STOP_WORDS)), TEXT))
def test_a_content_word_is_the_plain_rule(word: str) -> None:
    assert _is_content_word(word) == content_word_before(word)
    assert _is_content_word(word) == content_word_before(word)  # cached


@given(st.builds(" ".join, WORDS), st.builds(" ".join, WORDS), TEXT)
def test_restates_is_the_plain_rule(statement: str, other: str, noise: str) -> None:
    for a, b in ((statement, other), (other, statement), (statement + noise, other)):
        assert restates(a, b) == restates_before(a, b)
        assert restates(a, b) == restates_before(a, b)  # cached


@given(TEXT)
@example("a\x00b")
@example("\udc80 and ascii")
def test_storable_text_is_the_substitution(text: str) -> None:
    made = storable_text(text)
    assert made == _UNSTORABLE.sub(REPLACEMENT, text)
    assert type(made) is str


def test_storable_text_makes_a_subclass_an_exact_str() -> None:
    class Text(str):
        pass

    made = storable_text(Text("plain ascii"))
    assert type(made) is str and made == "plain ascii"


@given(
    st.recursive(
        st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), TEXT),
        lambda inner: st.one_of(st.lists(inner), st.dictionaries(TEXT, inner)),
        max_leaves=20,
    )
)
def test_storable_json_keeps_every_scalar_and_fixes_every_string(value: object) -> None:
    def before(v: object) -> object:
        if isinstance(v, str):
            return _UNSTORABLE.sub(REPLACEMENT, v)
        if isinstance(v, dict):
            return {before(k): before(x) for k, x in v.items()}
        if isinstance(v, list | tuple):
            return [before(x) for x in v]
        return v

    assert repr(storable_json(value)) == repr(before(value))  # repr: NaN equals itself there


def test_the_cached_type_names_are_the_substitution() -> None:
    for cls in EVENT_CLASSES:
        for _ in range(2):
            assert event_type_name(cls) == type_name_before(cls.__name__)
            assert type_of(f"{cls.__module__}:{cls.__qualname__}") == type_name_before(cls.__name__)


@given(st.from_regex(r"[A-Za-z][A-Za-z0-9]{0,20}", fullmatch=True))
def test_any_class_name_is_named_as_before(name: str) -> None:
    assert event_type_name(type(name, (), {})) == type_name_before(name)
    assert type_of(f"module.path:Outer.{name}") == type_name_before(name)


@given(
    st.datetimes(
        min_value=datetime(2, 1, 1),  # a day from either end: any offset converts to UTC
        max_value=datetime(9998, 12, 31),
        timezones=st.one_of(st.none(), st.timezones()),
    )
)
def test_utc_text_is_the_naive_isoformat(moment: datetime) -> None:
    utc = moment.astimezone(UTC)
    spec = "microseconds" if utc.microsecond else "seconds"
    assert utc_text(moment) == utc.replace(tzinfo=None).isoformat(timespec=spec) + "Z"


def test_an_enum_encodes_as_its_value() -> None:
    for enum_class in ALL_ENUMS:
        for member in enum_class:
            assert EnumAsValue(enum_class).encode(member) == str(member.value)
