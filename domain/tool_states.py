"""The state axes and words of tools and evidence collection (SPEC §2, §8, §9).

A tool invocation's status and evidence, a collection's state and why it stopped, the gain of a
tool result and who decided it, and why a tool request was rejected or an invocation failed.
Each is its own ``Enum``, as every axis in :mod:`domain.states`.
"""

from __future__ import annotations

from enum import Enum


class InvocationStatus(Enum):
    """Lifecycle of a tool invocation that passed preflight (SPEC §8)."""

    PROJECTING = "PROJECTING"
    READY = "READY"
    ERROR = "ERROR"


class EvidenceStatus(Enum):
    """What a tool invocation found; null while PROJECTING (SPEC §8)."""

    EVIDENCE_FOUND = "EVIDENCE_FOUND"
    NO_EVIDENCE = "NO_EVIDENCE"
    ERROR = "ERROR"


class CollectionState(Enum):
    """Per-run evidence collection; SATURATED is terminal for collection only (SPEC §9)."""

    COLLECTING = "COLLECTING"
    SATURATED = "SATURATED"


class DiagnosisStopReason(Enum):
    """Why the tool loop stopped in a controlled way (SPEC §7, §9)."""

    INFORMATION_SATURATED = "INFORMATION_SATURATED"
    PROGRESS_PROTOCOL_VIOLATED = "PROGRESS_PROTOCOL_VIOLATED"
    BUDGET_LIMIT_REACHED = "BUDGET_LIMIT_REACHED"


class InformationGain(Enum):
    """Whether a tool result added information (SPEC §9)."""

    GAINED = "GAINED"
    NO_GAIN = "NO_GAIN"


class GainSource(Enum):
    """Who decided a gain verdict: the harness (NO_EVIDENCE, exact repeat) or the agent."""

    HARNESS = "HARNESS"
    AGENT = "AGENT"


class ToolRejectionCode(Enum):
    """Why a tool request was rejected at preflight, before any invocation record (SPEC §8)."""

    INVALID_RUN = "INVALID_RUN"
    INVALID_ID = "INVALID_ID"
    AUTH = "AUTH"
    NOT_READ_ONLY = "NOT_READ_ONLY"
    INVALID_REQUEST = "INVALID_REQUEST"
    BUDGET = "BUDGET"
    STORE = "STORE"
    UNAVAILABLE = "UNAVAILABLE"
    """Too many earlier calls of the tool never returned and still run: it is not asked now."""


class ToolErrorCode(Enum):
    """The harness's own error codes of a failed tool invocation (SPEC §8).

    ``TOOL_INVOCATION_FAILED`` stores its code as text, as it always has: a tool may also fail
    with a code of its own, and logs written before this enum must read the same.
    """

    TIMEOUT = "TIMEOUT"
    EXECUTION = "EXECUTION"
    MALFORMED = "MALFORMED"
    SIZE = "SIZE"
    BUDGET = "BUDGET"
    ABANDONED = "ABANDONED"
    UNAVAILABLE = "UNAVAILABLE"
    """Too many earlier calls of the tool never returned and still run: it was not asked."""
