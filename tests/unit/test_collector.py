"""Fewer garbage collections during a catch-up: raised for the block, the process's own after."""

from __future__ import annotations

import gc
import threading
from typing import TYPE_CHECKING

import pytest

from projections.collector import YOUNG_THRESHOLD, fewer_collections

if TYPE_CHECKING:
    from collections.abc import Iterator


@pytest.fixture
def thresholds() -> Iterator[tuple[int, int, int]]:
    saved = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield gc.get_threshold()
    gc.set_threshold(*saved)


def test_the_young_threshold_is_raised_inside_and_restored_after(
    thresholds: tuple[int, int, int],
) -> None:
    with fewer_collections():
        assert gc.get_threshold() == (YOUNG_THRESHOLD, 10, 10)
        assert gc.isenabled()
    assert gc.get_threshold() == thresholds


def test_the_last_of_overlapping_blocks_restores_the_process_thresholds(
    thresholds: tuple[int, int, int],
) -> None:
    entered, leave = threading.Event(), threading.Event()

    def other() -> None:
        with fewer_collections():
            entered.set()
            leave.wait()

    thread = threading.Thread(target=other)
    thread.start()
    entered.wait()
    with fewer_collections():
        leave.set()
        thread.join()  # the other block ended first: still raised for this one
        assert gc.get_threshold()[0] == YOUNG_THRESHOLD
    assert gc.get_threshold() == thresholds


def test_an_error_in_the_block_still_restores_them(thresholds: tuple[int, int, int]) -> None:
    with pytest.raises(RuntimeError), fewer_collections():
        raise RuntimeError("a batch failed")
    assert gc.get_threshold() == thresholds
