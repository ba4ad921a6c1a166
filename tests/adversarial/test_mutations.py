"""Mutated drafts: whatever a model changes in an honest draft, only proven text is published.

Hypothesis starts from the honest draft of ``control_supported.yaml`` and mutates it as a
hostile or sloppy model would: edits inside excerpts, look-alike characters, substrings cut to
a word or two, padding, truncation, swapped references, forged ids, facts that restate the
conclusion, a judge that splits its verdicts. Each example is a whole run on a fresh SQLite
file; every run must keep the log's invariants and publish only statements the log proves.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from infrastructure.model_scripted import load_scenario
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
        cut.map(lambda i: excerpt[:i]),  # truncated
        st.sampled_from((" ", "e", "ERROR", "30s", "2026-11-29", excerpt.upper())),
    )


@st.composite
def mutated(draw: st.DrawFn) -> dict[str, Any]:
    scenario = copy.deepcopy(BASE)
    draft = scenario["steps"][-1]["draft"]
    statements = [draft["conclusion"], *draft["facts"]]
    for statement in statements:
        if draw(st.booleans()):
            continue  # this statement stays honest: the others are tampered with
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
