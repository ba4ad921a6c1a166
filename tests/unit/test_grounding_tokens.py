"""Excerpts are whole tokens of the evidence, and notes about a result are never evidence."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from domain.grounding import Evidence, excerpt_problem, normalise, occurs
from domain.release_states import CitationProblem
from domain.tokens import cuts_a_token, whole_tokens
from tests._fuzz import fuzz_settings

CUT, NOTE, ABSENT = (
    CitationProblem.EXCERPT_CUTS_A_TOKEN,
    CitationProblem.EXCERPT_QUOTES_A_NOTE,
    CitationProblem.EXCERPT_ABSENT,
)
METRICS = "2026-11-29T10:05:00Z checkout error_rate=0.97 latency -40ms threshold 1e-3"
DEPLOY = (
    "2026-11-29T09:58:00Z pricing-service v2.14.0 replicas ready 3/3 db.pool ok\u0338 ratio 97%"
)
SENTENCE = "checkout ERROR upstream timeout after 30s."
EMOJI = (
    "team \U0001f468\u200d\U0001f469\u200d\U0001f467 status \u2764\ufe0f ok \u845b\U000e0100 end"
)


@pytest.mark.parametrize(
    ("excerpt", "content"),
    [
        ("checkout error_rate=0", METRICS),  # 0 of 0.97
        ("error_rate=0.9", METRICS),
        ("97 latency", METRICS),  # the decimal part without its number
        ("threshold 1e", METRICS),  # 1e of 1e-3
        ("threshold 1e-", METRICS),
        ("v2.14.0 replicas ready 3", DEPLOY),  # 3 of 3/3
        ("2026-11-29T09:58:00Z pricing", DEPLOY),  # pricing of pricing-service
        ("pricing-service v2.14", DEPLOY),  # v2.14 of v2.14.0
        ("3/3 db.pool ok", DEPLOY),  # ok before a combining slash
        ("db.pool ok\u0338 ratio 97", DEPLOY),  # 97 of 97%
        ("10:05:00Z checkout error_rate", METRICS),  # a timestamp is one token
        ("team \U0001f468", EMOJI),  # a ZWJ sequence cut after its first person
        ("team \U0001f468\u200d", EMOJI),  # or after the joiner
        ("status \u2764", EMOJI),  # a heart without its variation selector
        ("ok \u845b", EMOJI),  # an ideograph without its variation selector
    ],
)
def test_an_excerpt_cutting_a_token_is_refused(excerpt: str, content: str) -> None:
    assert excerpt_problem(excerpt, Evidence(content)) is CUT
    assert not occurs(excerpt, content)


def test_a_sign_stays_with_its_number() -> None:
    assert excerpt_problem("40ms down", Evidence("latency went -40ms down")) is CUT
    assert excerpt_problem("40ms)", Evidence("latency went (-40ms)")) is CUT
    assert excerpt_problem("went -", Evidence("latency went -40ms down")) is CUT
    assert occurs("latency went -40ms down", "latency went -40ms down")
    assert occurs("pool at 100/100 in use", "payments pool at 100/100 in use")


@pytest.mark.parametrize(
    ("excerpt", "content"),
    [
        ("checkout error_rate=0.97 latency -40ms", METRICS),
        ("error_rate=0.97", METRICS),
        ("latency -40ms threshold 1e-3", METRICS),
        ("2026-11-29T10:05:00Z checkout", METRICS),
        ("pricing-service v2.14.0 replicas ready 3/3", DEPLOY),
        ("db.pool ok\u0338 ratio 97%", DEPLOY),
        ("upstream timeout after 30s", SENTENCE),  # a final period is punctuation
        ("upstream timeout after 30s.", SENTENCE),
        ("team \U0001f468\u200d\U0001f469\u200d\U0001f467 status", EMOJI),
        ("status \u2764\ufe0f ok", EMOJI),
        ("ok \u845b\U000e0100 end", EMOJI),
        ("by ci: new payment client", "v2.14.0 deployed by ci: new payment client"),
    ],
)
def test_an_excerpt_of_whole_tokens_is_accepted(excerpt: str, content: str) -> None:
    assert excerpt_problem(excerpt, Evidence(content)) is None
    assert occurs(excerpt, content)


def test_text_is_compared_in_nfc_on_both_sides() -> None:
    composed, decomposed = "caf\u00e9 latency over budget", "cafe\u0301 latency over budget"
    assert occurs(decomposed, composed) and occurs(composed, decomposed)
    assert excerpt_problem("cafe latency over budget", Evidence(composed)) is ABSENT


def test_a_token_found_cut_in_one_place_and_whole_in_another_is_accepted() -> None:
    content = "error_rate=0.97 at 10:05\nerror_rate=0 at 10:06"
    assert occurs("error_rate=0 at", content)


def test_whole_tokens_widens_a_span_to_the_tokens_it_touches() -> None:
    start = DEPLOY.index("14")
    assert DEPLOY[slice(*whole_tokens(DEPLOY, start, start + 2))] == "v2.14.0"
    start = METRICS.index("40ms")
    assert METRICS[slice(*whole_tokens(METRICS, start, start + 2))] == "-40ms"
    assert not cuts_a_token(METRICS, *whole_tokens(METRICS, 3, 30))


# -- notes are not evidence ---------------------------------------------------------------------


RECORD = "2026-11-29T10:05:00Z checkout ERROR upstream timeout after 30s"


@pytest.mark.parametrize(
    "note", ["[12 more records truncated]", "[40 more records beyond limit=20]"]
)
def test_a_note_kept_apart_is_never_evidence(note: str) -> None:
    evidence = Evidence(RECORD, (note,))
    assert excerpt_problem(note, evidence) is NOTE
    assert excerpt_problem(note.strip("[]"), evidence) is NOTE
    assert excerpt_problem("ERROR upstream timeout after 30s", evidence) is None


@pytest.mark.parametrize(
    "note",
    [
        "[12 more records truncated]",
        "[40 more records beyond limit=20]",
        "[5000 more bytes of the result not shown]",
    ],
)
def test_a_note_written_into_the_content_of_an_old_log_is_never_evidence(note: str) -> None:
    content = f"{RECORD}\n{note}\n2026-11-29T10:06:00Z checkout ERROR pool exhausted"
    evidence = Evidence(content)
    assert excerpt_problem(note, evidence) is NOTE
    assert excerpt_problem(f"after 30s {note}", evidence) is NOTE  # spanning a record and it
    assert excerpt_problem(f"{note} 2026-11-29T10:06:00Z checkout", evidence) is NOTE
    assert excerpt_problem("upstream timeout after 30s", evidence) is None  # records still count
    assert excerpt_problem("checkout ERROR pool exhausted", evidence) is None
    assert excerpt_problem("payments ERROR pool exhausted", evidence) is ABSENT


def test_a_record_cut_short_in_an_old_log_is_quoted_without_its_note() -> None:
    evidence = Evidence("checkout ERROR upstream timeout after 30s …[cut: 9000 bytes]")
    assert excerpt_problem("upstream timeout after 30s", evidence) is None
    assert excerpt_problem("after 30s …[cut: 9000 bytes]", evidence) is NOTE


# -- every position ------------------------------------------------------------------------------


def _bounds(tokens: list[str]) -> tuple[str, set[int], set[int]]:
    """The line of ``tokens`` set off by spaces, and where its tokens start and end."""
    starts, ends, at = set(), set(), 0
    for token in tokens:
        starts.add(at)
        ends.add(at + len(token))
        at += len(token) + 1
    return " ".join(tokens), starts, ends


def _check_every_cut(tokens: list[str], spans: list[tuple[int, int]]) -> None:
    """Each excerpt ``line[i:j]`` is accepted exactly when it occurs somewhere on token bounds."""
    line, starts, ends = _bounds(tokens)
    assert normalise(line) == line
    for i, j in spans:
        excerpt = line[i:j]
        if excerpt != excerpt.strip() or normalise(excerpt) != excerpt:
            continue  # not an excerpt as quoted: its ends are spaces, or it is not in NFC
        whole = any(line.startswith(excerpt, k) and k + len(excerpt) in ends for k in starts)
        problem = excerpt_problem(excerpt, Evidence(line))
        assert problem is (None if whole else CUT), (tokens, excerpt)


FIXED = [
    [unicodedata.normalize("NFC", token) for token in line.split(" ")]
    for line in (
        "2026-11-29T10:05:00Z checkout error_rate 0.97 latency -40ms threshold 1e-3",
        DEPLOY,
        EMOJI,
        "took -40ms +3 \u22125 .5 1.5e+10 97% 3/3 a_b:c/d-e.f",
        "k\u0338x \u00e9t\u00e9 n\u0303o\u0301 #\ufe0f\u20e3 \U0001f44d\U0001f3fd",
        "\U0001f1e9\U0001f1ea flag \U0001f3f4\U000e0067\U000e0062\U000e007f end",
    )
]


@pytest.mark.parametrize("tokens", FIXED, ids=range(len(FIXED)))
def test_an_excerpt_cut_at_any_position_of_a_line_is_refused_unless_whole(
    tokens: list[str],
) -> None:
    line = " ".join(tokens)
    _check_every_cut(
        tokens, [(i, j) for i in range(len(line)) for j in range(i + 1, len(line) + 1)]
    )


MARKS = "\u0301\u0308\u0323\u0338\u20dd"
_digits = st.from_regex(r"[0-9]{1,4}", fullmatch=True)
_number = st.builds(
    lambda sign, whole, part, exponent, unit: f"{sign}{whole}{part}{exponent}{unit}",
    st.sampled_from(["", "-", "+", "\u2212"]),
    _digits,
    st.one_of(st.just(""), _digits.map(lambda d: f".{d}"), _digits.map(lambda d: f"/{d}")),
    st.one_of(
        st.just(""), st.builds(lambda s, d: f"e{s}{d}", st.sampled_from(["", "-", "+"]), _digits)
    ),
    st.sampled_from(["", "ms", "s", "%", "MiB"]),
)
_word = st.from_regex(r"[a-zA-Z][a-zA-Z0-9_]{0,5}", fullmatch=True)
_identifier = st.builds(
    lambda first, rest: first + "".join(j + w for j, w in rest),
    _word,
    st.lists(st.tuples(st.sampled_from(list("._-/:+")), _word), max_size=3),
)
_marked = st.lists(
    st.tuples(st.sampled_from(list("aeiouknxz\u0430\u03b1")), st.text(MARKS, max_size=2)),
    min_size=1,
    max_size=5,
).map(lambda parts: unicodedata.normalize("NFC", "".join(a + m for a, m in parts)))
_person = st.sampled_from(["\U0001f468", "\U0001f469", "\U0001f467", "\u2764\ufe0f"])
_emoji = st.lists(
    st.tuples(_person, st.sampled_from(["", "\U0001f3fb", "\U0001f3fd"])),
    min_size=1,
    max_size=4,
).map(lambda parts: "\u200d".join(p + skin for p, skin in parts))
_selected = st.builds(
    lambda base, selector: base + selector,
    st.sampled_from(["\u2764", "\u263a", "\u845b", "#", "1"]),
    st.sampled_from(["\ufe0e", "\ufe0f", "\U000e0100", "\U000e01ef"]),
)
_token = st.one_of(_number, _identifier, _marked, _emoji, _selected)


@fuzz_settings(300)
@given(st.lists(_token, min_size=1, max_size=8), st.data())
def test_generated_evidence_every_cut_inside_a_token_is_refused(
    tokens: list[str], data: st.DataObject
) -> None:
    line = " ".join(tokens)
    assume(normalise(line) == line)
    pairs = st.tuples(st.integers(0, len(line) - 1), st.integers(1, len(line)))
    spans = [(i, j) for i, j in data.draw(st.lists(pairs, min_size=1, max_size=40)) if i < j]
    _check_every_cut(tokens, spans)
