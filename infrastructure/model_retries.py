"""Retries of one model call: which failures are tried again and how long to wait before.

A rate limit (429), a server error (5xx but 501), a failed or reset connection and a timed-out
attempt are tried again, at most ``max_retries`` times, after the server's ``retry-after-ms`` or
``Retry-After`` when it sends one, else an exponential backoff with jitter. A retry is made only
when its wait and a useful attempt fit in what is left of the call's bound (the model timeout or
the run's deadline, whichever comes first, :meth:`application.run_context.RunContext.call_model`):
the harness never waits past it. Anything else (400, 401, 403, 404, 422, a 429 that says the
quota is spent) fails at once. Each retried attempt is returned as a
:class:`~domain.values.ModelAttempt`, which the model step records.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING

import openai

from domain.states import ModelAttemptFailure
from domain.values import ModelAttempt

if TYPE_CHECKING:
    from collections.abc import Callable

    import httpx

MIN_ATTEMPT_S = 0.25
"""The least time an attempt after a wait needs to be worth making."""
_NOT_RETRIED_STATUSES = frozenset({501})
"""Server errors that another attempt cannot change (Not Implemented)."""
_QUOTA_CODES = frozenset({"insufficient_quota"})
"""429 codes that say the account is out of credit: waiting does not help."""


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry: ``base_s`` doubled per retry up to ``cap_s``, jittered."""

    max_retries: int = 2
    base_s: float = 0.5
    cap_s: float = 8.0
    jitter: Callable[[], float] = random.random
    """A number in [0, 1): the backoff is scaled into its upper half, so waits spread out."""

    def __post_init__(self) -> None:
        """Refuse what cannot be meant."""
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be zero or more, got {self.max_retries!r}")
        if not 0 <= self.base_s <= self.cap_s:
            raise ValueError(f"need 0 <= base_s <= cap_s, got {self.base_s!r} and {self.cap_s!r}")

    def backoff(self, retry: int) -> float:
        """Seconds to wait before retry number ``retry`` (0 for the first) with no server hint."""
        return float(min(self.cap_s, self.base_s * 2**retry) * (0.5 + self.jitter() / 2))

    def next_attempt(
        self, error: openai.APIError, tried: int, left: float
    ) -> tuple[ModelAttempt | None, str]:
        """The attempt to record and wait out before retrying, or None and why not retried.

        ``tried`` counts the attempts made; ``left`` is the seconds left of the call's bound.
        """
        failure, status = classify(error)
        if failure is None:
            return None, ""
        if tried > self.max_retries:
            return None, f"gave up after {tried} attempts (HARNESS_MODEL_MAX_RETRIES)"
        hinted = server_wait(error)
        wait = self.backoff(tried - 1) if hinted is None else hinted
        if wait + MIN_ATTEMPT_S > left:
            asked = "the server asked to wait" if hinted is not None else "the next retry waits"
            return None, f"not retried: {asked} {wait:.2f} s, {left:.2f} s of the call's bound left"
        return ModelAttempt(failure, status, round(wait * 1000)), ""


def classify(error: openai.APIError) -> tuple[ModelAttemptFailure | None, int]:
    """Why ``error`` may be retried, with its HTTP status (0: none); None: it may not."""
    if isinstance(error, openai.APITimeoutError):
        return ModelAttemptFailure.TIMEOUT, 0
    if isinstance(error, openai.APIConnectionError):
        return ModelAttemptFailure.CONNECTION, 0
    if not isinstance(error, openai.APIStatusError):
        return None, 0
    status = error.status_code
    if status == 429 and error.code not in _QUOTA_CODES:
        return ModelAttemptFailure.RATE_LIMITED, status
    if status >= 500 and status not in _NOT_RETRIED_STATUSES:
        return ModelAttemptFailure.SERVER_ERROR, status
    return None, status


def server_wait(error: openai.APIError) -> float | None:
    """Seconds the server asked to wait (``retry-after-ms``, else ``Retry-After``); None: none."""
    response: httpx.Response | None = getattr(error, "response", None)
    if response is None:
        return None
    headers = response.headers
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        seconds = _seconds(value, scale) if value else None
        if seconds is not None:
            return seconds
    return None


def _seconds(value: str, scale: float) -> float | None:
    """A header's delay in seconds: a number (in units of ``1/scale`` s) or an HTTP date."""
    try:
        number = float(value)
    except ValueError:
        return _until(value) if scale == 1.0 else None
    return number / scale if number >= 0 and number == number else None  # not NaN


def _until(value: str) -> float | None:
    """Seconds from now to an HTTP date (``Retry-After: Wed, 21 Oct 2015 07:28:00 GMT``)."""
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - datetime.now(UTC)).total_seconds())
