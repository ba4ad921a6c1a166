"""``HARNESS_API_KEYS``' entries: a secret, who holds it and their role, checked together."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, SecretStr

MIN_KEY_CHARS = 16
RESERVED_NAMES = frozenset({"local"})
"""Principal names the harness gives itself (``harness ask`` runs as ``local``): no key may."""


class ApiKey(BaseModel):
    """One entry of ``HARNESS_API_KEYS``: a secret, who holds it and their role."""

    model_config = {"frozen": True}

    key: SecretStr = Field(
        description="The secret a client sends as its bearer token (at least 16 characters)."
    )
    name: str = Field(
        min_length=1,
        max_length=200,
        description="Who holds the key: the owner recorded on the runs it starts (1 to 200"
        " characters, unique, not the reserved 'local').",
    )
    role: Literal["user", "auditor", "admin"] = Field(
        description="What the key may do: user (start runs, see and cancel only its own),"
        " auditor (read every run and the audit, change nothing), admin (an auditor who may also"
        " start and cancel runs and rebuild projections)."
    )


def check_api_keys(keys: list[ApiKey]) -> None:
    """Refuse short keys, a key or a name listed twice, and the names the harness reserves."""
    seen_keys: dict[str, int] = {}
    seen_names: dict[str, int] = {}
    for number, entry in enumerate(keys, start=1):
        secret = entry.key.get_secret_value()
        who = f"API key {number} (name {entry.name})"
        if len(secret) < MIN_KEY_CHARS:
            raise ValueError(
                f"{who} is {len(secret)} characters; keys need {MIN_KEY_CHARS} or more"
            )
        if entry.name in RESERVED_NAMES:
            raise ValueError(f"{who}: the name {entry.name!r} is reserved for the local CLI user")
        if secret in seen_keys:
            raise ValueError(f"{who} repeats the secret of API key {seen_keys[secret]}")
        if entry.name in seen_names:
            raise ValueError(f"{who} repeats the name of API key {seen_names[entry.name]}")
        seen_keys[secret], seen_names[entry.name] = number, number
