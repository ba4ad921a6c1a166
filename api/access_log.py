"""Credentials sent in a query string stay out of the access log.

The service reads keys only from ``Authorization``; a client that puts one in the URL is refused,
but uvicorn would still write the URL to its access log. A filter on the ``uvicorn.access``
logger replaces the value of every credential-looking query parameter, and every known secret
wherever it appears (``?x=<an API key>``, :mod:`infrastructure.known_secrets`), before any
handler sees the line, whichever way uvicorn was started (``harness serve`` or ``uvicorn
--factory``).
"""

from __future__ import annotations

import logging
import re
from urllib.parse import unquote_plus

from domain.redactor import MARK, Redactor

NO_SECRETS = Redactor()

ACCESS_LOGGER = "uvicorn.access"
REDACTED = MARK
CREDENTIAL_NAME = re.compile(r"key|token|passw|pwd|secret|auth|credential|signature", re.I)
"""What a query parameter's name holds when its value may be a credential (api_key, Token, …)."""
_PARAMETER = re.compile(r"(?<=[?&;])([^=&;?#\s\"]+)=([^&;#\s\"]*)")


def redact_query(text: str) -> str:
    """``text`` with the value of each credential-looking ``name=value`` of a query replaced."""

    def replace(found: re.Match[str]) -> str:
        name = found[1]
        return f"{name}={REDACTED}" if CREDENTIAL_NAME.search(unquote_plus(name)) else found[0]

    return _PARAMETER.sub(replace, text) if "?" in text else text


class RedactQueryCredentials(logging.Filter):
    """Rewrites a log record's message and arguments: query credentials and known secrets."""

    def __init__(self, secrets: Redactor = NO_SECRETS) -> None:
        """Hide the values of ``secrets`` too, wherever they are in a line."""
        super().__init__()
        self.secrets = secrets

    def redact(self, text: str) -> str:
        """``text`` with known secrets, then credential-looking query values, replaced."""
        return redact_query(self.secrets.hide_known(text))

    def filter(self, record: logging.LogRecord) -> bool:
        """Redact, and always let the record through."""
        if isinstance(record.msg, str):
            record.msg = self.redact(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(
                self.redact(arg) if isinstance(arg, str) else arg for arg in record.args
            )
        return True


def redact_access_log(secrets: Redactor = NO_SECRETS) -> None:
    """Install the filter on uvicorn's access logger (once per process), knowing ``secrets``.

    An app built later in the same process adds its secrets: none is ever forgotten.
    """
    logger = logging.getLogger(ACCESS_LOGGER)
    for installed in logger.filters:
        if isinstance(installed, RedactQueryCredentials):
            installed.secrets = installed.secrets.joined(secrets)
            return
    logger.addFilter(RedactQueryCredentials(secrets))
