"""Failure causes fit for the log: secrets redacted and the text bounded, before it is recorded.

A cause is an exception's type and message, and messages carry what the failing call held: a
database URL with its password, a request URL with an ``api_key`` in its query string, an
``Authorization: Bearer …`` header. The log is exported and read by auditors, so a cause is
redacted when it is recorded, never later. Redaction is by pattern and so best effort: it
covers credentials in URLs, ``name=value`` and ``name: value`` pairs whose name says key,
token, secret, password or credential, Bearer/Basic credentials and ``sk-…`` API keys.
"""

from __future__ import annotations

import re

CAUSE_LIMIT = 500
"""The most characters of a failure cause the log keeps (a longer one is cut, marked with …)."""

SCANNED = 20 * CAUSE_LIMIT
"""Characters of a message looked at: what lies beyond would be cut anyway."""

HIDDEN = "***"

_SECRET_NAME = r"[\w.-]*(?:key|token|secret|passw(?:or)?d|pwd|credential|signature|auth)[\w.-]*"

_VALUE = r"(?:\"[^\"]*\"|'[^']*'|[^\s&\"',;)}\]]+)"
"""A value: quoted (spaces and all), else up to a separator."""

_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # scheme://user:password@host and scheme://token@host
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]+@"), rf"\1{HIDDEN}@"),
    # Authorization: Bearer abc / Basic abc
    (re.compile(r"(?i)\b(bearer|basic)\s+[\w.~+/=-]+"), rf"\1 {HIDDEN}"),
    # api_key=…, ?token=…, password = '…'
    (re.compile(rf"(?i)\b({_SECRET_NAME})(\s*=\s*){_VALUE}"), rf"\1\2{HIDDEN}"),
    # "password": "…", 'api_key': … (JSON, a dict's repr)
    (re.compile(rf"(?i)([\"']{_SECRET_NAME}[\"']\s*:\s*){_VALUE}"), rf"\1{HIDDEN}"),
    # bare provider keys (sk-…, sk-proj-…)
    (re.compile(r"\bsk-[\w-]{8,}"), f"sk-{HIDDEN}"),
)


def redact(text: str) -> str:
    """``text`` with everything that looks like a credential replaced by ``***``."""
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def failure_cause(text: str) -> str:
    """A cause as the log keeps it: on one line, redacted, at most :data:`CAUSE_LIMIT` chars."""
    line = redact(" ".join(text[:SCANNED].split()))
    while len(line) > CAUSE_LIMIT:  # a cut may leave a fragment that reads as another secret
        line = redact(line[: CAUSE_LIMIT - 1] + "…")
    return line


def describe_error(error: BaseException) -> str:
    """An exception as a cause: its type and message (see :func:`failure_cause`)."""
    try:
        message = str(error)
    except Exception:  # a broken __str__ must not stop the failure from being recorded
        message = "(its message could not be read)"
    return failure_cause(f"{type(error).__name__}: {message}" if message else type(error).__name__)
