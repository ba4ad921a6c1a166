"""Observations: the evidence records behind proven statements, in the harness's words."""

from __future__ import annotations

from domain.grounding import Citation
from domain.observations import Observation, in_time_order, is_record, observations, record_of

CONTENT = "\n".join(
    [
        "2026-11-29T10:07:00Z checkout WARN retry budget spent for pricing-service",
        "2026-11-29T10:05:00Z checkout ERROR upstream timeout after 30s calling pricing-service",
        "a record without a time: cache warmed",
    ]
)


def test_a_record_is_the_whole_line_the_excerpt_was_found_in() -> None:
    line = record_of("upstream timeout after 30s", CONTENT)
    assert line == CONTENT.splitlines()[1]
    assert is_record(line, CONTENT)
    assert not is_record("upstream timeout after 30s", CONTENT)  # part of a short line


def test_observations_are_in_time_order_undated_last_and_worded_by_the_harness() -> None:
    def resolve(reference: str) -> tuple[str, str, str] | None:
        return ("search_logs", "service=checkout", CONTENT) if reference == "r1" else None

    cited = [
        Citation("r1", "cache warmed"),
        Citation("r1", "retry budget spent for pricing-service"),
        Citation("r1", "upstream timeout after 30s"),
        Citation("r1", "upstream timeout after 30s calling"),  # the same record again
        Citation("forged", "anything at all here"),  # proves nothing: left out
    ]
    found = observations(cited, resolve)
    assert [o.at for o in found] == ["2026-11-29T10:05:00Z", "2026-11-29T10:07:00Z", None]
    assert found[0].text == (
        'At 2026-11-29T10:05:00Z, search_logs (service=checkout) returned "'
        + CONTENT.splitlines()[1]
        + '"'
    )
    assert found[2].text.startswith("Undated: search_logs (service=checkout) returned ")
    assert in_time_order(found) == found


def test_a_time_with_an_offset_is_ordered_by_its_instant() -> None:
    late = Observation("r", "t", "", "2026-11-29T12:00:00+02:00 later in UTC? no: 10:00Z")
    early = Observation("r", "t", "", "2026-11-29T10:30:00Z after it")
    assert in_time_order([early, late]) == (late, early)
