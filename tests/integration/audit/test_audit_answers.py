"""``harness audit verify`` on the answer routes: a log of system-chat and knowledge answers
verifies clean, and an answer rewritten behind valid links is named under design §10.1."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from application.replies import ungrounded_text
from bootstrap.composition import bootstrap
from domain.answer_rules import AnswerRefusal
from domain.published import ListedPassage
from infrastructure.settings import Settings
from tests.integration._audit_helpers import (
    TLS_PASSAGE,
    env_of,
    harness_cli,
    load,
    named,
    relink,
    run_answers,
    save,
    violations,
)


@dataclass(frozen=True)
class Logged:
    env: dict[str, str]
    export: Path


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory) -> Logged:
    directory = tmp_path_factory.mktemp("answers")
    settings = Settings(database_url=f"sqlite:///{directory / 'harness.db'}")
    with bootstrap(settings, create=True) as services:
        run_answers(services)
    env = env_of(settings)
    export = directory / "audit.jsonl"
    done = harness_cli(env, "audit", "export", "--all", "--out", str(export))
    assert done.exit_code == 0, done.stderr
    return Logged(env, export)


def test_the_answer_routes_verify_clean(logged: Logged) -> None:
    result = harness_cli(logged.env, "audit", "verify", str(logged.export))

    assert result.exit_code == 0, result.stdout
    contents = [r["payload"]["content"] for r in _decisions(load(logged.export))]
    assert {c.get("reply") for c in contents} >= {"GREETING", "HOW_TO_ASK"}
    assert {c.get("grounded") for c in contents} >= {True, False}


def _claim(content: dict[str, Any]) -> bool:
    if content.get("reply") != "GREETING":
        return False
    content["text"] = "checkout was slow because deploy v2.14.0 broke pricing"
    return True


def _unknown_reply(content: dict[str, Any]) -> bool:
    if content.get("reply") != "GREETING":
        return False
    content["reply"] = "DIAGNOSIS"
    return True


def _moved_excerpt(content: dict[str, Any]) -> bool:
    if content.get("grounded") is not True:
        return False
    content["citations"][0]["excerpt"] = "Renewal is never needed for these certificates."
    return True


def _other_passage(content: dict[str, Any]) -> bool:
    if content.get("grounded") is not True:
        return False
    content["citations"][0]["reference"] = TLS_PASSAGE.replace("overview", "renew")
    return True


def _model_text_in_fallback(content: dict[str, Any]) -> bool:
    if content.get("grounded") is not False or not content["passages"]:
        return False
    content["text"] = "Restart everything."
    return True


def _uncited(content: dict[str, Any]) -> bool:
    if content.get("grounded") is not True:
        return False
    content["citations"] = []
    return True


def _rewritten_text(content: dict[str, Any]) -> bool:
    if content.get("grounded") is not True:
        return False
    content["text"] = "Expired certificates never break HTTPS; checkout is broken now."
    return True


def _relisted(content: dict[str, Any]) -> bool:
    """A listed passage's sentence rewritten, and the list's text with it: only the log knows."""
    if content.get("grounded") is not False or not content["passages"]:
        return False
    content["passages"][0]["sentence"] = "Roll back the last deploy now."
    listed = [ListedPassage(p["id"], p["title"], p["sentence"]) for p in content["passages"]]
    content["text"] = ungrounded_text(listed, AnswerRefusal(content["refusal"]))
    return True


def _refusal_changed(content: dict[str, Any]) -> bool:
    if content.get("refusal") != "CITATION_REJECTED":
        return False
    content["refusal"] = "NOT_JSON"
    return True


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (_claim, "not the harness's text for GREETING"),
        (_unknown_reply, "a system-chat reply that does not exist"),
        (_moved_excerpt, "whose excerpt is not in it"),
        (_other_passage, "no passage of it"),
        (_model_text_in_fallback, "not the harness's list"),
        (_uncited, "cites nothing"),
        (_rewritten_text, "whose text the log does not derive"),
        (_relisted, "whose text, passages the log does not derive"),
        (_refusal_changed, "as NOT_JSON, which the log does not derive"),
    ],
    ids=lambda v: getattr(v, "__name__", "")[1:] or None,
)
def test_a_rewritten_answer_is_named(
    logged: Logged, tmp_path: Path, edit: Callable[[dict[str, Any]], bool], says: str
) -> None:
    records = load(logged.export)
    decision = next(r for r in _decisions(records) if edit(r["payload"]["content"]))
    relink(records, decision["stream"])

    result = harness_cli(logged.env, "audit", "verify", str(save(tmp_path / "x.jsonl", records)))

    assert result.exit_code == 1, result.stdout
    found = named(result, decision, "design §10.1")
    assert len(found) == 1 and says in found[0].text, violations(result)


def _decisions(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if r["type"] == "RELEASE_DECISION"]
