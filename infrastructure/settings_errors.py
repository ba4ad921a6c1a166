"""One-line descriptions of invalid ``HARNESS_*`` settings, without echoing secret values."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError
    from pydantic_settings import SettingsError


def describe_validation(error: ValidationError) -> str:
    """One line naming each invalid variable and why, without echoing secret values."""
    problems = []
    for item in error.errors():
        field, *inner = item["loc"]
        where = f"HARNESS_{str(field).upper()}"
        if field == "api_keys" and inner and isinstance(inner[0], int):
            where += f": API key {inner[0] + 1}"
            inner = inner[1:]
        if inner:
            where += ": " + ".".join(str(part) for part in inner)
        message = " ".join(str(item["msg"]).removeprefix("Value error, ").split())  # one line
        problems.append(f"{where}: {message}")
    return "; ".join(problems)


def describe_settings_error(error: SettingsError) -> str:
    """One line naming the ``HARNESS_*`` variable whose JSON value could not be parsed."""
    text = str(error)
    field = text.split('field "', 1)[-1].split('"', 1)[0] if 'field "' in text else ""
    where = f"HARNESS_{field.upper()}" if field else "a HARNESS_* variable"
    cause = error.__cause__
    reason = f" ({cause})" if cause is not None else ""
    return f"{where}: not valid JSON{reason}"
