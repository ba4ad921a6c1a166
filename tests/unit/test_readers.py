"""Which log entries a runner deserialises (``projections.base.Readers``): told by topic alone."""

from __future__ import annotations

from uuid import uuid4

from eventsourcing.persistence import Notification
from eventsourcing.utils import get_topic

from domain.checkpoint import AuditCheckpoint
from domain.run import Run
from domain.tool_invocation import ToolInvocation
from projections.base import Readers
from projections.runner import all_projections
from projections.sse_feed import SseFeed


def _notification(position: int, topic: str) -> Notification:
    return Notification(
        id=position, originator_id=uuid4(), originator_version=1, topic=topic, state=b"{}"
    )


def test_the_feed_reads_its_five_classes_and_a_topic_that_names_none() -> None:
    readers = Readers([SseFeed()])
    started = _notification(1, get_topic(Run.RunStarted))
    invoked = _notification(2, get_topic(ToolInvocation.ToolInvocationStarted))
    nowhere = _notification(3, "nowhere:Nothing")
    no_class = _notification(5, "os:getcwd")
    terminated = _notification(4, get_topic(Run.RunTerminated))
    assert readers.wanted([started, invoked, nowhere, terminated]) == [
        started,
        nowhere,  # deserialising it says what is wrong with it
        terminated,
    ]
    assert readers.wanted([invoked, invoked, nowhere, no_class]) == [nowhere, no_class]


def test_all_projections_read_every_invocation_event_and_not_the_audit_checkpoints() -> None:
    readers = Readers(all_projections())
    invoked = _notification(1, get_topic(ToolInvocation.ToolInvocationStarted))
    checkpoint = _notification(2, get_topic(AuditCheckpoint.CheckpointRecorded))
    assert readers.wanted([invoked, checkpoint]) == [invoked]
