"""A quote inside a statement is a citation: every quoted span must be one of its excerpts."""

from __future__ import annotations

import pytest

from domain.grounding import DEFAULT_RULES, Citation
from domain.quotes import fact_problems, quoted_spans, uncited_quotes
from domain.release_states import CitationProblem
from domain.values import Fact

EVIDENCE = "2026-11-29T10:05:00Z checkout ERROR upstream timeout after 30s calling pricing-service"
EXCERPT = "upstream timeout after 30s"


@pytest.mark.parametrize(
    ("statement", "spans"),
    [
        ('checkout logged "upstream timeout after 30s"', ["upstream timeout after 30s"]),
        ("the logs say “the deploy broke pricing” twice", ["the deploy broke pricing"]),
        ("it reported `error_rate=0` first", ["error_rate=0"]),
        ('an unclosed "quote runs to the end', ["quote runs to the end"]),
        ("checkout logged 'orders were lost' at 10:05", ["orders were lost"]),
        ("checkout's pool and payments' db were fine", []),  # apostrophes quote nothing
        ("no quotes at all", []),
    ],
)
def test_quoted_spans_are_found(statement: str, spans: list[str]) -> None:
    assert list(quoted_spans(statement)) == spans


def test_a_quote_equal_to_an_excerpt_whitespace_aside_is_cited() -> None:
    assert uncited_quotes('it logged "upstream  timeout after\n30s"', [EXCERPT]) == []
    assert uncited_quotes('it logged "timeout after 3"', [EXCERPT]) == ["timeout after 3"]


def test_a_statement_quoting_what_it_does_not_cite_fails_the_guard() -> None:
    def source(reference: str) -> tuple[str | None, CitationProblem | None]:
        return EVIDENCE, None

    cited = (Citation("r1", EXCERPT),)
    honest = Fact(f'Checkout logged "{EXCERPT}".', cited)
    assert fact_problems(honest, source, DEFAULT_RULES) == []
    quoting = Fact('Checkout logged "error_rate=0" and timed out.', cited)
    assert fact_problems(quoting, source, DEFAULT_RULES) == [
        (Citation("", "error_rate=0"), CitationProblem.QUOTE_NOT_CITED)
    ]
