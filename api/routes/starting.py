"""Starting a run from an API request: limits checked against the configured ones."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from uuid import uuid4

from fastapi.exceptions import RequestValidationError

from api.errors import no_session
from domain.errors import SessionNotYoursError
from domain.values import Budget

if TYPE_CHECKING:
    from api.auth import Principal
    from api.deps import Worker
    from api.schemas import ChatCreate
    from application.dispatch import Started


def start_run(worker: Worker, body: ChatCreate, caller: Principal) -> Started:
    """Admit and start a run for ``caller`` (blocking: call it from a worker thread).

    A session is its first run's owner's (the store claims it with that run); a run of someone
    else's session is refused in the very words of a session that does not exist.
    """
    deadline_s, limits = _checked(worker, body)
    session = body.session_id or uuid4().hex
    try:
        return worker.dispatcher.submit(
            session, body.query, owner=caller.name, deadline_s=deadline_s, limits=limits
        )
    except SessionNotYoursError:
        raise no_session(session) from None


def _checked(worker: Worker, body: ChatCreate) -> tuple[float | None, Budget | None]:
    settings = worker.settings
    errors: list[dict[str, Any]] = []
    if len(body.query) > settings.max_query_chars:
        errors.append(
            _error(("query",), f"at most {settings.max_query_chars} characters", body.query[:50])
        )
    if body.deadline_s is not None and body.deadline_s > settings.run_deadline:
        errors.append(
            _error(("deadline_s",), f"at most {settings.run_deadline} seconds", body.deadline_s)
        )
    configured = settings.limits
    limits: Budget | None = None
    if body.budget is not None:
        asked = body.budget.model_dump()
        for name, value in asked.items():
            if value is not None and value > getattr(configured, name):
                ceiling = getattr(configured, name)
                errors.append(_error(("budget", name), f"at most {ceiling}", value))
        limits = Budget(
            **{name: getattr(configured, name) if v is None else v for name, v in asked.items()}
        )
    if errors:
        raise RequestValidationError(errors)
    return body.deadline_s, limits


def _error(where: tuple[str, ...], limit: str, value: object) -> dict[str, Any]:
    return {
        "type": "less_than_equal",
        "loc": ("body", *where),
        "msg": f"Input should be {limit} (the configured maximum)",
        "input": value,
    }
