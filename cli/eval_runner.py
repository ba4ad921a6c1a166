"""Run an eval suite: each case in a run of its own, in an isolated store, then scored.

Every case gets a fresh SQLite file holding the sample data and the runbooks (cases sharing a
``session`` label share one, and run in one session in suite order, each with the previous
turn's run as context). Services come from the composition root with the configured settings,
only the store changed: the configured model, tools, budgets, deadline and guards, or the
case's recorded tools (``fixture``) instead of the configured ones. What each run published is
scored by :func:`domain.evals.score`; the whole is a :class:`~domain.evals.EvalReport`.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit
from uuid import uuid4

from api.auth import LOCAL
from application.eval_answers import answer_of, headline, published_kind
from bootstrap.composition import Overrides, bootstrap
from domain.evals import CaseResult, EvalReport, score
from infrastructure.fixture_tools import fixture_tools

if TYPE_CHECKING:
    from collections.abc import Callable
    from uuid import UUID

    from application.chat import ChatResult
    from bootstrap.composition import Services
    from infrastructure.eval_cases import Case, Suite
    from infrastructure.settings import Settings


@dataclass(frozen=True)
class CaseDetail:
    """What a case's run published, for the reports (the scores are in its CaseResult)."""

    published: str
    """What kind of content: ``diagnosis``, ``fallback TYPE``, ``nothing``, ..."""
    headline: str
    """The conclusion, the answer's text or the fallback's message (model text: escape it)."""


@dataclass(frozen=True)
class SuiteRun:
    """A finished evaluation: the report, and what each case's run published, by case id."""

    report: EvalReport
    details: dict[str, CaseDetail]


@dataclass
class _Stores:
    """The cases' stores: one file per case, or per session label, under ``root``."""

    root: Path
    settings: Settings
    files: dict[str, Path] = field(default_factory=dict)
    last_run: dict[str, UUID] = field(default_factory=dict)
    """The last run of each session label (the next turn's context)."""

    def open(self, case: Case, number: int) -> Services:
        """The case's services over its store (a new one holds the sample data)."""
        key = f"session:{case.session}" if case.session else f"case:{case.id}"
        fresh = key not in self.files
        if fresh:
            kind = f"session-{_safe(case.session)}" if case.session else case.id
            self.files[key] = self.root / f"{number:03d}-{kind}.db"
        settings = self.settings.model_copy(
            update={"database_url": f"sqlite:///{self.files[key]}", "database_schema": "public"}
        )
        tools = fixture_tools(case.fixture) if case.fixture is not None else None
        given = Overrides(tools=tools, heartbeat=False)
        return bootstrap(settings, create=True, sample=fresh, overrides=given)


def run_suite(
    settings: Settings,
    suite: Suite,
    *,
    store_dir: Path | None = None,
    on_case: Callable[[int, CaseResult], None] | None = None,
) -> SuiteRun:
    """Run every case of ``suite`` with ``settings`` and score it.

    ``store_dir`` keeps each case's store there (an empty or new directory), so its run can be
    explained afterwards; otherwise they go in a temporary directory, removed at the end.
    ``on_case`` hears of each case as it is scored (its number from 1). Recording the report is
    the caller's, once it has shown it (``cli.evals``).
    """
    started = datetime.now(UTC)
    results: list[CaseResult] = []
    details: dict[str, CaseDetail] = {}
    with tempfile.TemporaryDirectory(prefix="harness-eval-", ignore_cleanup_errors=True) as tmp:
        root = store_dir or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        stores = _Stores(root, settings)
        for number, case in enumerate(suite.cases, start=1):
            result, details[case.id] = _run_case(stores, case, number)
            results.append(result)
            if on_case is not None:
                on_case(number, result)
    report = EvalReport(
        eval_id=uuid4(),
        suite=suite.name,
        model=model_label(settings),
        settings=eval_settings(settings),
        started_at=started,
        finished_at=datetime.now(UTC),
        results=tuple(results),
    )
    return SuiteRun(report, details)


def _run_case(stores: _Stores, case: Case, number: int) -> tuple[CaseResult, CaseDetail]:
    services = stores.open(case, number)
    with services:
        chat = services.chat  # a ConfigurationError (a tool server, a scenario) goes up
        session = case.session or case.id
        previous = stores.last_run.get(session) if case.session else None
        began = time.monotonic()
        result = chat.ask(session, case.question, previous_run=previous, owner=LOCAL)
        latency_ms = round((time.monotonic() - began) * 1000)
        usage = services.store.get_run(result.run_id).usage
    stores.last_run[session] = result.run_id
    return _scored(case, result, usage.tokens, usage.model_calls, latency_ms), CaseDetail(
        published_kind(result.published), headline(result.published)
    )


def _scored(
    case: Case, result: ChatResult, tokens: int, model_calls: int, latency_ms: int
) -> CaseResult:
    verdict = score(case.expectation(), answer := answer_of(result.published))
    return CaseResult(
        case_id=case.id,
        question=case.question,
        verdict=verdict.verdict,
        published_wrong=verdict.published_wrong,
        reasons=verdict.reasons,
        run_id=str(result.run_id),
        state=result.termination.state.value,
        release=result.release_outcome.value,
        fallback_type=answer.fallback_type,
        tokens=tokens,
        model_calls=model_calls,
        latency_ms=latency_ms,
    )


def model_label(settings: Settings) -> str:
    """The model evaluated: ``offline``, ``scripted:PATH`` or ``openai:NAME``."""
    if settings.model == "openai":
        return f"openai:{settings.openai_model}"
    return settings.model


def eval_settings(settings: Settings) -> dict[str, str]:
    """The settings that shape the answers, as text; never a secret (the key is left out)."""
    shaping = {
        "model": model_label(settings),
        "model_timeout": settings.model_timeout,
        "model_max_retries": settings.model_max_retries,
        "run_deadline": settings.run_deadline,
        "budget_model_calls": settings.budget_model_calls,
        "budget_tool_calls": settings.budget_tool_calls,
        "budget_tokens": settings.budget_tokens,
        "budget_bytes": settings.budget_bytes,
        "excerpt_min_words": settings.excerpt_min_words,
        "excerpt_min_chars": settings.excerpt_min_chars,
        "tools": str(settings.tools_config) if settings.tools_config else "builtin",
    }
    if settings.model == "openai":  # the server, without a query string that may hold a key
        url = urlsplit(settings.openai_base_url)
        shaping["openai_base_url"] = f"{url.scheme}://{url.hostname or ''}{_port(url)}{url.path}"
    return {name: str(value) for name, value in shaping.items()}


def _port(url: object) -> str:
    port = getattr(url, "port", None)
    return f":{port}" if port else ""


def _safe(label: str | None) -> str:
    """A session label as a file name's part (``:`` and ``@`` become ``_``)."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in label or "")
