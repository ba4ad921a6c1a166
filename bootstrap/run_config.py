"""The run limits a chat service is built with: the configured ones, or a scenario's over them."""

from __future__ import annotations

import os
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from application.chat import ChatConfig
from domain.grounding import GroundingRules
from infrastructure.known_secrets import known_secrets
from infrastructure.model_scripted import scenario_limits
from infrastructure.reference_clock import reference_time

if TYPE_CHECKING:
    from infrastructure.settings import Settings


def chat_config_of(settings: Settings) -> ChatConfig:
    """The configured run limits, deadline, model timeout, grounding, secrets and reference time."""
    return ChatConfig(
        deadline_s=settings.run_deadline,
        limits=settings.limits,
        model_timeout_s=settings.model_timeout,
        commit_interval_s=settings.run_commit_interval,
        grounding=GroundingRules(settings.excerpt_min_words, settings.excerpt_min_chars),
        redactor=known_secrets(settings, os.environ),
        reference_time=reference_time(
            settings.reference_time, sample_tools=settings.tools_config is None
        ),
    )


def chat_config(scenario: dict[str, Any], base: ChatConfig | None = None) -> ChatConfig:
    """A scripted scenario's run limits (``budget``, ``deadline_s``) over ``base``."""
    base = base or ChatConfig()
    limits, deadline_s = scenario_limits(scenario, base.limits, base.deadline_s)
    return replace(base, limits=limits, deadline_s=deadline_s)
