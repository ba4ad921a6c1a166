"""The chain links and their check, on records built by hand (no store)."""

from __future__ import annotations

import dataclasses
import json
from uuid import UUID, uuid4

import pytest
from eventsourcing.persistence import JSONTranscoder
from hypothesis import given
from hypothesis import strategies as st

from application.audit.chain import canonical, link, split_state, state_link, with_link
from application.audit.records import AuditFormatError, AuditRecord, read_jsonl, type_of
from tests.log_checks import check_chain

TOPIC = "domain.run:Run.RoutingAttempt"
KEY = b"an audit key of the tests"

texts = st.text(st.characters(codec="utf-8"))  # storable: no lone surrogates
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.floats() | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=10,
)


def stream(
    count: int, name: UUID | None = None, start: int = 1, key: bytes | None = None
) -> list[AuditRecord]:
    """``count`` linked records of one stream, at positions ``start``…"""
    name = name or uuid4()
    records: list[AuditRecord] = []
    previous = ""
    for version in range(1, count + 1):
        payload = {"attempt": version, "note": f"event {version}"}
        chain = link(previous, str(name), version, TOPIC, payload, key)
        records.append(
            AuditRecord(
                start + version - 1,
                str(name),
                version,
                "ROUTING_ATTEMPT",
                TOPIC,
                None,
                payload,
                chain,
            )
        )
        previous = chain
    return records


def interleaved() -> list[AuditRecord]:
    """Two streams of four events, interleaved in log order."""
    a, b = stream(4), stream(4)
    merged = [r for pair in zip(a, b, strict=True) for r in pair]
    return [dataclasses.replace(r, position=i) for i, r in enumerate(merged, start=1)]


def test_a_clean_log_has_no_violation() -> None:
    assert check_chain(interleaved()) == []


def test_an_edited_payload_is_named_and_only_it() -> None:
    log = interleaved()
    log[4] = dataclasses.replace(log[4], payload={**log[4].payload, "attempt": 99})
    found = check_chain(log)
    assert [(v.rule, v.record) for v in found] == [("chain", log[4])]
    assert "edited" in found[0].describe()
    assert f"position {log[4].position}" in found[0].describe()


def test_a_dropped_event_is_named_by_the_version_missing_before_the_next() -> None:
    log = interleaved()
    dropped = log.pop(2)  # the first stream's version 2
    successor = next(r for r in log if (r.stream, r.version) == (dropped.stream, 3))
    found = check_chain(log)
    assert found and all(v.record is successor for v in found)
    assert {v.rule for v in found} == {"order", "chain"}
    assert any("version 2 of its stream is missing" in v.message for v in found)


def test_an_inserted_copy_is_named() -> None:
    log = interleaved()
    forged = dataclasses.replace(log[2], payload={**log[2].payload, "note": "forged"})
    log.insert(3, forged)
    found = check_chain(log)
    assert found and all(v.record is forged for v in found)
    assert {v.rule for v in found} == {"order", "chain"}


def test_lines_moved_in_an_export_are_named_as_out_of_order() -> None:
    log = interleaved()
    moved = log.pop(1)
    log.insert(4, moved)  # position 2 now comes after positions 3, 4 and 5
    found = check_chain(log)
    assert [(v.rule, v.record) for v in found] == [("order", moved)]
    assert "comes after position 5" in found[0].message


def test_events_swapped_in_a_stream_are_named() -> None:
    log = interleaved()
    second, third = log[2], log[4]  # the first stream's versions 2 and 3
    log[2] = dataclasses.replace(second, payload=third.payload, hash=third.hash)
    log[4] = dataclasses.replace(third, payload=second.payload, hash=second.hash)
    found = check_chain(log)
    named = [v.record for v in found]
    assert named[:2] == [log[2], log[4]]
    assert {v.rule for v in found} == {"chain"}
    assert all(r is not None and r.stream == second.stream for r in named)


def test_positions_swapped_in_a_stream_are_named() -> None:
    log = interleaved()
    second, third = log[2], log[4]
    log[2] = dataclasses.replace(third, position=second.position)
    log[4] = dataclasses.replace(second, position=third.position)
    found = check_chain(log)
    assert any(v.record is log[2] for v in found)
    assert any("missing before it" in v.message for v in found)


def test_keyed_links_need_the_key_and_refuse_another() -> None:
    log = stream(3, key=KEY)
    assert check_chain(log, KEY) == []
    assert [v.rule for v in check_chain(log, b"another key")] == ["chain"] * 3
    keyless = check_chain(log)
    assert len(keyless) == 1 and "audit key" in keyless[0].message


def test_a_record_without_a_link_is_named() -> None:
    log = stream(2)
    log[1] = dataclasses.replace(log[1], hash=None)
    assert [v.record for v in check_chain(log)] == [log[1]]


@given(st.dictionaries(texts, json_values, max_size=5), json_values, json_values)
def test_a_payload_read_back_gives_the_bytes_it_was_linked_over(
    payload: dict[str, object], a: object, b: object
) -> None:
    written = JSONTranscoder().encode(payload)  # what the store writes
    assert canonical(json.loads(written)) == written
    if canonical(a) != canonical(b):  # (NaN != NaN, yet both are written NaN)
        assert link("", "s", 1, TOPIC, {"x": a}) != link("", "s", 1, TOPIC, {"x": b})


@pytest.mark.parametrize("state", [b"{}", b'{"a":1}', '{"b":{"b":[1,2.5]},"a":"é"}'.encode()])
def test_a_link_stored_in_a_state_comes_back_out(state: bytes) -> None:
    chain = link("", "s", 1, TOPIC, {})
    payload, found = split_state(with_link(state, chain))
    assert found == chain
    assert canonical(payload) == state


@pytest.mark.parametrize(
    "state",
    [
        b'{"a":1}',
        b'{"x":NaN}',  # the standard parser's alone
        b'{"x":"\\ud800"}',
        b'{"n":123456789012345678901234567890}',
        '{"b":{"b":[1,2.5]},"a":"é"}'.encode(),
        b'{"_chain":7}',  # not a link
    ],
)
def test_the_link_alone_is_read_as_split_state_reads_it(state: bytes) -> None:
    assert state_link(state) == split_state(state)[1]
    chained = with_link(state, link("", "s", 1, TOPIC, {}))
    assert state_link(chained) == split_state(chained)[1] is not None


@pytest.mark.parametrize("state", [b"[1]", b"not json", b'{"a":', b""])
def test_a_state_that_is_no_json_object_is_refused_by_the_link_reader_too(state: bytes) -> None:
    with pytest.raises(ValueError, match="."):
        split_state(state)
    with pytest.raises(ValueError, match="."):
        state_link(state)


def test_type_names_come_from_topics() -> None:
    assert type_of("domain.run:Run.RunStarted") == "RUN_STARTED"
    assert type_of("domain.session:Session.SessionClaimed") == "SESSION_CLAIMED"


@pytest.mark.parametrize(
    ("line", "named"),
    [
        ("not json", "not JSON"),
        ("[1, 2]", "JSON object"),
        ('{"position": 1}', "missing field"),
        (
            '{"position": "1", "stream": "00000000-0000-0000-0000-000000000001", "version": 1,'
            ' "type": "T", "topic": "t", "timestamp": null, "payload": {}, "hash": null}',
            "'position'",
        ),
        (
            '{"position": 1, "stream": "run-1", "version": 1,'
            ' "type": "T", "topic": "t", "timestamp": null, "payload": {}, "hash": null}',
            "not a UUID",
        ),
    ],
)
def test_a_malformed_export_line_is_named(line: str, named: str) -> None:
    with pytest.raises(AuditFormatError, match=named) as caught:
        list(read_jsonl(["", line]))
    assert str(caught.value).startswith("line 2:")
