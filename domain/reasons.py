"""Why a router's or judge's answer could not be used: a code and a length, never the answer.

A reason is recorded (``ROUTING_DECISION.error``, ``SEMANTIC_GUARD_DECISION.unavailable``) and
shown on terminals and pages, so it is built only from the harness's own words: a code of
:class:`UnusableAnswer`, then the answer's length in characters or the failed call's error
class. The answer itself stays where the log keeps it whole (``AGENT_MODEL_STEP``) and in the
audit export. :func:`shown_reason` shows a recorded reason only when it is such a code; a
reason recorded before the codes (which could quote the answer) is shown as a length alone.
"""

from __future__ import annotations

import re
from enum import Enum


class UnusableAnswer(Enum):
    """Why the harness could not use a model's answer (router or judge)."""

    MODEL_FAILED = "MODEL_FAILED"
    """No answer: the call failed (the model step records how)."""
    TOO_LARGE = "TOO_LARGE"
    """Over the size limit: refused whole, unread."""
    NOT_JSON = "NOT_JSON"
    """The answer is not JSON."""
    NO_INTENT = "NO_INTENT"
    """Router: JSON, but not an object with an ``intent``."""
    UNKNOWN_INTENT = "UNKNOWN_INTENT"
    """Router: an ``intent`` that is none of the three."""
    NOT_VERDICTS = "NOT_VERDICTS"
    """Judge: not an object of ``verdicts`` and a ``reason``."""
    NO_VERDICT_LIST = "NO_VERDICT_LIST"
    """Judge: ``verdicts`` is not a list."""
    MALFORMED_VERDICT = "MALFORMED_VERDICT"
    """Judge: a verdict that is not exactly a statement index and a verdict."""
    VERDICT_FOR_NO_STATEMENT = "VERDICT_FOR_NO_STATEMENT"
    """Judge: a verdict for no statement shown, or a second verdict for one."""
    UNKNOWN_VERDICT = "UNKNOWN_VERDICT"
    """Judge: a verdict word that is neither SUPPORTED nor UNSUPPORTED."""
    KEY_REPEATED = "KEY_REPEATED"
    """Judge: a key named twice in one object (a verdict could be taken back unseen)."""
    VERDICT_MISSING = "VERDICT_MISSING"
    """Judge: no verdict for a statement it was shown."""


def answer_reason(code: UnusableAnswer, length: int) -> str:
    """``NOT_JSON (412 characters)``: a code and the length of the answer it is about."""
    return f"{code.value} ({length} characters)"


def failed_reason(error: BaseException) -> str:
    """``MODEL_FAILED (ModelTimeoutError)``: no answer came; the model step records the rest."""
    return f"{UnusableAnswer.MODEL_FAILED.value} ({type(error).__name__})"


_CODES = "|".join(code.value for code in UnusableAnswer)
_REASON = re.compile(
    rf"({_CODES}) \((\d{{1,12}} characters|[A-Z][A-Za-z]{{0,60}}Error)\)", re.ASCII
)


def is_reason(recorded: str) -> bool:
    """Whether ``recorded`` is a reason of this module's making: a code, then a length or class."""
    return _REASON.fullmatch(recorded) is not None


def shown_reason(recorded: str) -> str:
    """A recorded reason as a terminal or page shows it: ``NOT_JSON, 412 characters``.

    Only a reason of this module's making is shown, as its code and length (or error class);
    any other text (recorded before the codes existed, or edited) is never echoed, only
    measured: ``unrecognised reason, 87 characters recorded``.
    """
    made = _REASON.fullmatch(recorded)
    if made:
        return f"{made[1]}, {made[2]}"
    return f"unrecognised reason, {len(recorded)} characters recorded"
