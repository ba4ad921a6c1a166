"""The model provider the settings name, built for the composition root."""

from __future__ import annotations

from typing import TYPE_CHECKING

from infrastructure.model_config import SCRIPTED, check_model
from infrastructure.model_offline import OfflineProvider
from infrastructure.model_scripted import ScriptedProvider, load_scenario

if TYPE_CHECKING:
    from collections.abc import Callable

    from application.ports import ModelProvider
    from infrastructure.settings import Settings


def configured_provider(settings: Settings) -> tuple[ModelProvider, Callable[[], None] | None]:
    """The provider ``HARNESS_MODEL`` names, and what closes it (None: nothing to close).

    Raises:
        ValueError: the model settings are wrong (settings built without their checks).
    """
    name = settings.model
    try:
        check_model(name)
    except ValueError as error:
        raise ValueError(f"HARNESS_MODEL: {error}") from None
    if name.startswith(SCRIPTED):
        scripted = ScriptedProvider(load_scenario(name.removeprefix(SCRIPTED)))
        return scripted, scripted.release
    if name == "openai":
        # openai takes about a third of a second to import; only this provider needs it
        from infrastructure.model_openai import OpenAICompatibleProvider

        provider = OpenAICompatibleProvider.from_settings(settings)
        return provider, provider.close
    return OfflineProvider(), None
