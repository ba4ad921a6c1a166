"""The offline model's reading of a question's time against the reference clock."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from infrastructure.offline_time import Unresolved, Window, previous_window, resolve
from infrastructure.reference_clock import check_reference_time, reference_time

NOW = datetime(2026, 12, 1, tzinfo=UTC)


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


@pytest.mark.parametrize(
    ("question", "start", "end"),
    [
        ("what happened to payments yesterday", "2026-11-30T00:00", "2026-12-01T00:00"),
        ("Is everything OK with search right now?", "2026-11-30T23:00", "2026-12-01T00:00"),
        ("is checkout slow now", "2026-11-30T23:00", "2026-12-01T00:00"),
        ("errors in the last 6 hours", "2026-11-30T18:00", "2026-12-01T00:00"),
        ("what broke last night", "2026-11-30T18:00", "2026-12-01T06:00"),
        ("was search down this morning", "2026-12-01T00:00", "2026-12-01T12:00"),
        ("anything today?", "2026-12-01T00:00", "2026-12-02T00:00"),
        ("Why was checkout slow on 2026-11-29?", "2026-11-29T00:00", "2026-11-30T00:00"),
        ("Why was checkout slow two days ago?", "2026-11-29T00:00", "2026-11-30T00:00"),
        ("and the day before yesterday?", "2026-11-29T00:00", "2026-11-30T00:00"),
        ("errors 3 days ago", "2026-11-28T00:00", "2026-11-29T00:00"),
        ("slow a day ago", "2026-11-30T00:00", "2026-12-01T00:00"),
        ("slow on 2026-11-29 between 10:00 and 12:00", "2026-11-29T10:00", "2026-11-29T12:00"),
        ("errors on 2026-11-30 from 15:00 UTC", "2026-11-30T15:00", "2026-12-01T00:00"),
        ("why is checkout slow", "2026-11-28T00:00", "2026-12-01T00:00"),
    ],
)
def test_a_time_resolves_against_the_reference(question: str, start: str, end: str) -> None:
    found = resolve(question, NOW)
    assert isinstance(found, Window)
    assert (found.start, found.end) == (at(start), at(end))


def test_an_explicit_date_wins_over_a_relative_word() -> None:
    found = resolve("yesterday, 2026-11-29, checkout was slow", NOW)
    assert isinstance(found, Window) and found.start == at("2026-11-29T00:00")


def test_the_same_day_is_the_previous_windows_day() -> None:
    previous = Window(at("2026-11-29T10:00"), at("2026-11-29T12:00"), "previous")
    found = resolve("What about payments on the same day?", NOW, previous)
    assert isinstance(found, Window)
    assert (found.start, found.end) == (at("2026-11-29T00:00"), at("2026-11-30T00:00"))


def test_the_same_day_with_nothing_before_is_unresolved() -> None:
    assert resolve("What about payments on the same day?", NOW) == Unresolved("same day")


def test_a_previous_window_is_read_from_the_previous_answer() -> None:
    said = "Between 2026-11-29T00:00:00Z and 2026-11-30T00:00:00Z, checkout slowed down"
    found = previous_window(said)
    assert found is not None and found.start == at("2026-11-29T00:00")
    assert previous_window("checkout slowed down") is None
    assert previous_window("2026-11-30T00:00:00Z then 2026-11-29T00:00:00Z") is None


def test_reversed_clock_times_fall_back_to_the_whole_day() -> None:
    found = resolve("on 2026-11-29 between 12:00 and 10:00", NOW)
    assert isinstance(found, Window) and found.end == at("2026-11-30T00:00")


@pytest.mark.parametrize(
    "value", ["auto", "sample", "system", "2026-11-30T12:00:00Z", "2026-11-30T12:00"]
)
def test_a_reference_time_setting_is_accepted(value: str) -> None:
    assert check_reference_time(value) == value


@pytest.mark.parametrize("value", ["", "tomorrow", "2026-11-30T12:00:00+02:00", "SAMPLE"])
def test_a_bad_reference_time_is_refused_naming_it(value: str) -> None:
    with pytest.raises(ValueError, match="is not a reference time: use auto, sample, system"):
        check_reference_time(value)


def test_the_reference_settings_mean_what_they_say() -> None:
    assert reference_time("sample") == NOW
    assert reference_time("system") is None
    assert reference_time("auto") == NOW  # the built-in tools serve the sample data
    assert reference_time("auto", sample_tools=False) is None  # the operator's tools: now
    assert reference_time("2026-11-30T12:00:00Z") == at("2026-11-30T12:00")


def test_a_date_that_does_not_exist_is_asked_about_never_rounded() -> None:
    assert resolve("Why was checkout slow on 2026-11-31?", NOW) == Unresolved("2026-11-31")
    for edge in ("0001-01-01", "9999-12-31"):  # no window with its look-back fits the calendar
        assert resolve(f"Why was checkout slow on {edge}?", NOW) == Unresolved(edge)


def test_the_same_window_is_the_previous_turns_and_without_one_it_is_asked_for() -> None:
    before = Window(at("2026-11-28T14:00"), at("2026-11-28T16:00"), "previous")
    same = resolve("And checkout in the same window?", NOW, before)
    assert (same.start, same.end) == (before.start, before.end)  # type: ignore[union-attr]
    assert resolve("And checkout at that time?", NOW) == Unresolved("that time")
