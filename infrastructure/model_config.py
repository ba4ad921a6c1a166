"""The model settings, checked when they are read, before anything is opened or created.

``HARNESS_MODEL`` names a provider this harness has, and a ``scripted:PATH`` names a scenario
that can be played (read, parsed and its steps, tools and limits well formed); a mistake is one
line naming the setting and the file, and no store is created first. ``HARNESS_OPENAI_BASE_URL``
carries no ``user:password@``: the HTTP client would send it as Basic authorization in place of
the model key, so the credential belongs in ``HARNESS_OPENAI_API_KEY`` (sent as a Bearer token).
:func:`infrastructure.model_provider.configured_provider` builds the provider they name.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from domain.values import DEFAULT_DEADLINE_S
from domain.values import DEFAULT_LIMITS as LIMITS
from infrastructure.model_scripted import ScriptedProvider, load_scenario, scenario_limits
from infrastructure.scripted_play import ScenarioError
from infrastructure.scripted_tools import scripted_tools

PROVIDERS = "offline, scripted:PATH or openai"
SCRIPTED = "scripted:"
CREDENTIAL_IN_URL = (
    "holds a user name or password (user:password@…), which the HTTP client would send in place"
    " of the model key: put the credential in HARNESS_OPENAI_API_KEY and give the URL without it"
)
"""Why a base URL with userinfo is refused; it never repeats the URL (it holds a secret)."""


def check_model(value: str) -> str:
    """Settings' validator of ``HARNESS_MODEL``: a known provider, a scenario that can be played.

    Raises:
        ValueError: what is wrong, naming the scenario file (never the whole setting twice).
    """
    if value in ("offline", "openai"):
        return value
    if value.startswith(SCRIPTED):
        path = value.removeprefix(SCRIPTED)
        if not path.strip():
            raise ValueError(f"{SCRIPTED} names no scenario file: use {SCRIPTED}PATH")
        check_scenario(path)
        return value
    raise ValueError(f"{value!r:.100} is not a model provider: use {PROVIDERS}")


def check_scenario(path: str) -> None:
    """Refuse a scenario that cannot be played: unreadable, malformed, bad steps, tools or limits.

    Raises:
        ScenarioError: a ``ValueError`` whose message names the file.
    """
    scenario = load_scenario(path)  # its errors name the file already
    try:
        ScriptedProvider(scenario)
        scripted_tools(scenario)
        scenario_limits(scenario, LIMITS, DEFAULT_DEADLINE_S)
    except (TypeError, ValueError) as error:  # ScenarioError, or int()/float() of a bad limit
        raise ScenarioError(f"scenario {path}: {error}") from None


def check_base_url(value: str) -> str:
    """Settings' validator of ``HARNESS_OPENAI_BASE_URL``: no credential in the URL itself.

    Raises:
        ValueError: :data:`CREDENTIAL_IN_URL`, which does not repeat the URL.
    """
    if credential_in_url(value):
        raise ValueError(CREDENTIAL_IN_URL)
    return value


def credential_in_url(url: str) -> bool:
    """Whether ``url`` carries userinfo (``user@``, ``user:password@`` or a bare ``@``)."""
    try:
        netloc = urlsplit(url.strip()).netloc
    except ValueError:  # e.g. an unbalanced "[": no userinfo the client could send either
        return False
    return "@" in netloc
