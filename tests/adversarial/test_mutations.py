"""Mutated drafts: whatever a model changes in an honest draft, only proven text is published.

Hypothesis starts from the honest draft of ``control_supported.yaml`` and mutates it as a
hostile or sloppy model would: edits inside excerpts, look-alike characters, substrings cut to
a word or two, cuts at every position (inside numbers, identifiers and grapheme clusters),
combining marks and joiners put in, the harness's own notes quoted, quotes inside statements
that are or are not their excerpts, padding, truncation, swapped references, forged ids, facts
that restate the conclusion, a judge that splits its verdicts. Each example is a whole run on a
fresh SQLite file; every run must keep the log's invariants: every published statement is
proven and judged, or worded by the harness (``tests/integration/_invariants.py``), and the
offline verifier agrees.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from application.audit.records import store_records
from application.audit.verify import verify_records
from infrastructure.model_scripted import load_scenario
from projections.sse_feed import run_feed
from tests._fuzz import fuzz_settings
from tests.helpers import ask_scripted, fresh_sqlite
from tests.integration._invariants import check_run, read_events

BASE = load_scenario(Path(__file__).parent / "control_supported.yaml")
BASE.pop("expect")
QUESTION = "Why was checkout slow on 2026-11-29 between 10:00 and 12:00 UTC?"
LOOK_ALIKES = {
    "o": "о",
    "a": "а",
    "e": "е",
    "p": "р",
    "c": "с",
    "0": "０",
    "3": "３",
    " ": "\u00a0",
}
REFERENCES = ("$1", "$2", "$3", "00000000-0000-4000-8000-000000000000", "inv-1", "")


JOINERS = ("\u0338", "\u0301", "\u200d", "\ufe0f", "\u200b")
"""A combining slash, a combining acute, a zero-width joiner, a variation selector, a ZWSP."""
NOTES = (
    "[3 more records truncated]",
    "[12 more records beyond limit=50]",
    "more records truncated",
)
"""The harness's own notes about a result, which are never evidence."""


def _excerpt_mutation(excerpt: str) -> st.SearchStrategy[str]:
    cut = st.integers(0, max(len(excerpt) - 1, 0))
    return st.one_of(
        st.just(excerpt),
        cut.map(lambda i: excerpt[:i] + "X" + excerpt[i + 1 :]),  # an edit inside
        cut.map(lambda i: excerpt[:i] + LOOK_ALIKES.get(excerpt[i], excerpt[i]) + excerpt[i + 1 :]),
        st.tuples(cut, cut).map(lambda ij: excerpt[min(ij) : max(ij) + 1]),  # a substring
        st.sampled_from((" and the database is down", " (confirmed)", "!")).map(
            lambda pad: excerpt + pad  # padded
        ),
        cut.map(lambda i: excerpt[:i]),  # truncated at any position: inside a token too
        cut.map(lambda i: excerpt[i:]),  # cut at the front at any position
        st.tuples(cut, st.sampled_from(JOINERS)).map(  # a mark or joiner put in
            lambda ij: excerpt[: ij[0]] + ij[1] + excerpt[ij[0] :]
        ),
        st.sampled_from(NOTES),  # the harness's own words quoted as evidence
        st.sampled_from((" ", "e", "ERROR", "30s", "2026-11-29", excerpt.upper())),
    )


def _statement_mutation(statement: str, excerpts: list[str]) -> st.SearchStrategy[str]:
    """The statement as written, or with a quote in it: of its excerpt, or of anything else."""
    quoted = st.sampled_from([*excerpts, "error_rate=0", "timeout after 3", "pricing is down"])
    marks = st.sampled_from((('"', '"'), ("\u201c", "\u201d"), ("`", "`"), ('"', "")))
    return st.one_of(
        st.just(statement),
        st.tuples(quoted, marks).map(lambda qm: f"{statement} {qm[1][0]}{qm[0]}{qm[1][1]}"),
    )


@st.composite
def mutated(draw: st.DrawFn) -> dict[str, Any]:
    scenario = copy.deepcopy(BASE)
    draft = scenario["steps"][-1]["draft"]
    statements = [draft["conclusion"], *draft["facts"]]
    for statement in statements:
        if draw(st.booleans()):
            continue  # this statement stays honest: the others are tampered with
        excerpts = [citation["excerpt"] for citation in statement["citations"]]
        statement["statement"] = draw(_statement_mutation(statement["statement"], excerpts))
        for citation in statement["citations"]:
            citation["excerpt"] = draw(_excerpt_mutation(citation["excerpt"]))
            if draw(st.integers(0, 5)) == 0:
                citation["reference"] = draw(st.sampled_from(REFERENCES))
        if draw(st.integers(0, 6)) == 0:
            statement["citations"].append(dict(draw(st.sampled_from(statement["citations"]))))
    if draw(st.booleans()):  # a fact that says the conclusion again, with a valid quote
        restated = draw(
            st.sampled_from(
                (
                    draft["conclusion"]["statement"],
                    draft["conclusion"]["statement"].upper(),
                    "Indeed: " + draft["conclusion"]["statement"],
                )
            )
        )
        cited = [{"reference": "$1", "excerpt": "upstream timeout after 30s"}]
        draft["facts"].append({"statement": restated, "citations": cited})
    count = 1 + len(draft["facts"])  # statements the judge may see, at most
    verdicts = st.sampled_from(("SUPPORTED", "UNSUPPORTED"))
    scenario["judge"] = draw(
        st.one_of(verdicts, st.lists(verdicts, min_size=count, max_size=count))
    )
    if draw(st.booleans()):
        scenario["repair"] = {"draft": copy.deepcopy(draft)}
    return scenario


@fuzz_settings(2000)
@given(mutated())
def test_only_proven_statements_are_published(scenario: dict[str, Any]) -> None:
    with fresh_sqlite() as services:
        result = ask_scripted(services, scenario, "mutant", QUESTION)
        check_run(result, read_events(services.store))  # includes: published == proven and judged
        report = verify_records(store_records(services.store), None, run_feed)
        assert report.clean, [v.describe() for v in report.violations]
