"""``HARNESS_REFERENCE_TIME``: the "now" relative times in questions are resolved against.

``sample`` is the sample data's own now (``now`` in ``infrastructure/sample/ops_sample.json``),
so "yesterday" names a day the sample covers; ``system`` is the wall clock at each run; ``auto``
(the default) is ``sample`` while the built-in tools serve the sample data (no
``HARNESS_TOOLS_CONFIG``) and ``system`` once tools of the operator's are configured (a real
deployment's "right now" is now, never the sample's frozen day); an ISO 8601 UTC time fixes it
(a replayable clock for evaluations). The agent prompt states it to every model
(:func:`application.prompts.agent_prompt`).
"""

from __future__ import annotations

from datetime import UTC, datetime

from infrastructure.ops_data import sample_now

SAMPLE, SYSTEM, AUTO = "sample", "system", "auto"


def check_reference_time(value: str) -> str:
    """Settings' validator: ``auto``, ``sample``, ``system`` or an ISO 8601 time in UTC.

    Raises:
        ValueError: naming what was given and what is accepted.
    """
    if value in (SAMPLE, SYSTEM, AUTO):
        return value
    _fixed(value)
    return value


def reference_time(value: str, sample_tools: bool = True) -> datetime | None:
    """The setting as a time; None for ``system`` (the clock's now at each run).

    ``sample_tools`` says whether the built-in tools over the sample data are the ones in use
    (what ``auto`` follows).
    """
    if value == AUTO:
        value = SAMPLE if sample_tools else SYSTEM
    if value == SYSTEM:
        return None
    if value == SAMPLE:
        return sample_now()
    return _fixed(value)


def _fixed(value: str) -> datetime:
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        moment = None
    if moment is None or (moment.tzinfo is not None and moment.utcoffset()):
        raise ValueError(
            f"{value!r:.60} is not a reference time: use auto, sample, system or an ISO 8601 UTC"
            " time such as 2026-11-30T12:00:00Z"
        )
    return moment.replace(tzinfo=UTC)
