"""The grounding rules: one normalisation, informative excerpts, restated conclusions."""

from __future__ import annotations

import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from domain.grounding import (
    DEFAULT_RULES,
    Citation,
    GroundingRules,
    citation_problem,
    normalise,
    occurs,
    restates,
)
from domain.release_states import CitationProblem
from domain.tokens import inside_a_token

LINE = "2026-11-29T10:05:00Z checkout ERROR upstream timeout after 30s calling pricing-service"


def test_whitespace_runs_collapse_and_nothing_else_changes() -> None:
    assert normalise("  upstream\t timeout\n\nafter 30s ") == "upstream timeout after 30s"
    assert normalise("Upstream Timeout") == "Upstream Timeout"  # case kept
    assert normalise("cafe\u0301  ok") == "caf\u00e9 ok"  # and composed (NFC)
    assert normalise("ﬁle ３0s") == "ﬁle ３0s"  # compatibility forms are kept (not NFKC)


@pytest.mark.parametrize(
    "excerpt",
    [
        "upstream timeout after 30s",
        "upstream   timeout\nafter 30s",  # wrapped differently than the content
        "ERROR upstream timeout",
    ],
)
def test_an_excerpt_of_the_content_occurs(excerpt: str) -> None:
    assert occurs(excerpt, LINE)
    assert citation_problem(Citation("x", excerpt), LINE) is None


@pytest.mark.parametrize(
    "excerpt",
    [
        "upstream timeout after 31s",  # edited
        "upstream timeоut after 30s",  # a Cyrillic o
        "upstream timeout after ３0s",  # a fullwidth digit
        "Upstream timeout after 30s",  # case is kept
        "timeout upstream after 30s",  # reordered
    ],
)
def test_a_look_alike_or_edited_excerpt_does_not_occur(excerpt: str) -> None:
    assert not occurs(excerpt, LINE)
    assert citation_problem(Citation("x", excerpt), LINE) is CitationProblem.EXCERPT_ABSENT


@pytest.mark.parametrize(
    "excerpt",
    [
        "upstream timeout after 3",  # a number cut short: "after 3" is not what the line says
        "pstream timeout after 30s",  # a word cut at the start
        "timeout after 30s call",  # and at the end
        "after 30s calling pricing",  # an identifier cut at its join
    ],
)
def test_an_excerpt_that_cuts_a_token_is_named_so(excerpt: str) -> None:
    assert not occurs(excerpt, LINE)
    assert citation_problem(Citation("x", excerpt), LINE) is CitationProblem.EXCERPT_CUTS_A_TOKEN


@pytest.mark.parametrize(
    "excerpt",
    [
        " ",
        "a",
        "e",
        "ERROR",
        "after 30s",
        "10:05:00Z",
        "2026-11-29T10:05:00Z",
        "- -- --- ----",
        "to the of and in",
        "is it on at by as",
    ],
)
def test_an_excerpt_that_proves_nothing_is_too_weak(excerpt: str) -> None:
    assert DEFAULT_RULES.weakness(excerpt) is not None
    assert citation_problem(Citation("x", excerpt), LINE + " " + excerpt) is (
        CitationProblem.EXCERPT_TOO_WEAK
    )


def test_the_rules_are_configurable() -> None:
    strict = GroundingRules(min_words=6, min_chars=30)
    assert DEFAULT_RULES.weakness("upstream timeout after 30s") is None
    assert strict.weakness("upstream timeout after 30s") is not None


def test_a_reference_that_resolved_to_nothing_is_unknown() -> None:
    assert citation_problem(Citation("x", "upstream timeout after 30s"), None) is (
        CitationProblem.UNKNOWN_REFERENCE
    )


@given(st.text(max_size=40), st.text(max_size=40), st.text(max_size=40))
@example("", "\u0300", "")  # a lone combining mark: the whole content once normalised
@example("a", "\u0300", "")  # continues the space after "a": it cuts that token
def test_every_part_of_a_content_occurs_in_it(before: str, middle: str, after: str) -> None:
    # set off by spaces, it cuts no token of the content, unless it starts with a character
    # that continues the space before it (a combining mark) or ends joining the space after;
    # a space at either end of the content is not there once normalised (ends are cut)
    text = normalise(middle)
    content = f"{before} {middle} {after}"
    # the rule below speaks of the middle's own place: an excerpt found elsewhere too (in
    # ``before`` or ``after``, or across them) may be whole there (see the test after this)
    assume(normalise(content).count(text) <= 1 if text else True)
    lead, trail = bool(normalise(before)), bool(normalise(after))
    joins_before = lead and inside_a_token(f" {text}", 1)
    joins_after = trail and inside_a_token(f"{text} ", len(text))
    whole = not text or not (joins_before or joins_after)
    assert occurs(middle, content) == (bool(text) and whole)


def test_an_excerpt_is_whole_where_any_of_its_occurrences_is() -> None:
    # after a space the modifier continues it (a token cut), but at the start it is whole
    assert not occurs("\U0001f3fb", "x \U0001f3fb")
    assert occurs("\U0001f3fb", "\U0001f3fb \U0001f3fb ")


@pytest.mark.parametrize(
    "fact",
    [
        "checkout slowed down after a deploy",
        "Checkout slowed down after a deploy.",
        "Note: checkout slowed down after a deploy (v2.14.0).",
        "after a deploy, checkout slowed down",  # reworded: the same content words
    ],
)
def test_a_fact_restating_the_conclusion_is_recognised(fact: str) -> None:
    assert restates(fact, "checkout slowed down after a deploy")


@pytest.mark.parametrize(
    "fact",
    ["pricing-service answered in 30s", "checkout had 12 errors at 10:05", ""],
)
def test_a_different_fact_is_not_a_restatement(fact: str) -> None:
    assert not restates(fact, "checkout slowed down after a deploy")
