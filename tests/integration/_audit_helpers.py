"""Shared by the audit tests: a realistic log, the ``harness audit`` CLI in-process, and exports
edited the way a tamperer would edit them."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from typer.testing import CliRunner, Result

from application.audit.chain import link
from bootstrap.composition import Services
from cli.main import app
from infrastructure.knowledge import SqlKnowledgeRetriever, index_runbooks
from infrastructure.settings import Settings
from tests.helpers import ask_scripted, scripted
from tests.integration._projection_helpers import QUERY, run_fleet

OWNER = "ann"


def build_log(services: Services) -> None:
    """Every SPEC §10 row, a few runtime paths, two owned turns; the read tables caught up."""
    run_fleet(services, lambda: None)
    with scripted(services, "conclusion_supported") as made:  # SESSION_CLAIMED, a second turn
        made.service.ask("owned-session", QUERY, owner=OWNER)
        made.service.ask("owned-session", QUERY, owner=OWNER)
    run_answers(services)
    services.projector().catch_up()


TLS_QUESTION = "How do I renew an expired TLS certificate?"
TLS_PASSAGE = "tls-certificate-expiry#overview"
TLS_SENTENCE = "Expired certificates break HTTPS for clients immediately and completely."
ANSWERS: list[tuple[dict[str, Any], str]] = [
    ({"route": "SYSTEM_CHAT", "answer": "GREETING"}, "hello"),
    ({"route": "SYSTEM_CHAT", "answer": "checkout broke after a deploy"}, "Why was it slow?"),
    (
        {
            "route": "KNOWLEDGE_QUERY",
            "answer": {
                "statements": [
                    {
                        "statement": f"The runbook says: {TLS_SENTENCE}",
                        "citations": [{"reference": TLS_PASSAGE, "excerpt": TLS_SENTENCE}],
                    }
                ]
            },
            "judge": "offline",
        },
        TLS_QUESTION,
    ),
    (
        {
            "route": "KNOWLEDGE_QUERY",
            "answer": {
                "statements": [
                    {
                        "statement": "Restart everything.",
                        "citations": [{"reference": TLS_PASSAGE, "excerpt": "the"}],
                    }
                ]
            },
        },
        TLS_QUESTION,
    ),
    ({"route": "KNOWLEDGE_QUERY", "answer": "nothing matches"}, "zzzz qqqq"),
]
"""System-chat and knowledge answers: picked, refused, grounded, ungrounded, nothing retrieved."""


def run_answers(services: Services) -> None:
    """Play :data:`ANSWERS` with the runbooks indexed in the store's database."""
    index_runbooks(services.engine)
    knowledge = SqlKnowledgeRetriever(services.engine)
    for scenario, question in ANSWERS:
        ask_scripted(services, scenario, "answers-session", question, tools={}, knowledge=knowledge)


def env_of(settings: Settings, key: str = "") -> dict[str, str]:
    """The environment a user would set for these settings (and no audit key by default)."""
    return {
        "HARNESS_DATABASE_URL": settings.database_url,
        "HARNESS_DATABASE_SCHEMA": settings.database_schema,
        "HARNESS_AUDIT_KEY": key,
    }


def harness_cli(env: dict[str, str], *args: str, stdin: str | None = None) -> Result:
    """``harness …`` in this process, with ``env`` as its HARNESS_* environment."""
    return CliRunner().invoke(app, list(args), env=env, input=stdin)


def clean_exit(result: Result) -> bool:
    """True when the command ended by its own exit code, not by an exception (a traceback)."""
    return result.exception is None or isinstance(result.exception, SystemExit)


# -- exports as JSON ------------------------------------------------------------------------------


def load(path: Path) -> list[dict[str, Any]]:
    """An export's records as JSON objects, in file order."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def save(path: Path, records: Sequence[dict[str, Any]]) -> Path:
    """Write records as an export."""
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), "utf-8")
    return path


def index_of(records: Sequence[dict[str, Any]], kind: str, nth: int = 0) -> int:
    """The file index of the ``nth`` record of a type."""
    return [i for i, r in enumerate(records) if r["type"] == kind][nth]


def relink(records: list[dict[str, Any]], stream: str, key: bytes | None = None) -> None:
    """Recompute every link of one stream, as someone rewriting it without the key could."""
    previous = ""
    for record in sorted((r for r in records if r["stream"] == stream), key=lambda r: r["version"]):
        record["hash"] = link(
            previous, stream, record["version"], record["topic"], record["payload"], key
        )
        previous = record["hash"]


def described(record: dict[str, Any]) -> str:
    """How a report names an event: type, position, stream and version."""
    return (
        f"{record['type']} at position {record['position']}"
        f" (stream {record['stream']} v{record['version']})"
    )


@dataclass(frozen=True)
class Found:
    """One line of a report."""

    rule: str
    text: str


def violations(result: Result) -> list[Found]:
    """The violation lines of a printed report."""
    found: list[Found] = []
    for line in result.stdout.splitlines():
        if line.startswith("[") and "] " in line:
            rule, text = line[1:].split("] ", 1)
            found.append(Found(rule, text))
    return found


def named(result: Result, record: dict[str, Any], rule: str | None = None) -> list[Found]:
    """The report's violations that name ``record`` (under ``rule`` when given)."""
    where = described(record)
    return [f for f in violations(result) if f.text.startswith(where) and rule in (None, f.rule)]
