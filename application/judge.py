"""The SemanticGuard: one judge call on exactly the statements that would be published.

The judge sees every statement (the conclusion first, then each verified fact) with its
citations and the content of every result they cite, and answers per statement. Its answer is
strict: one verdict for every statement, nothing else; anything less makes the guard
unavailable. The statements are recorded exactly as judged, so the verifier can check that
what was published is what was judged SUPPORTED.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from application.drafts import loads_json
from application.ports import Message, ModelError, ModelRequest
from application.prompts import JUDGE_PROMPT, JUDGE_SCHEMA
from domain.grounding import JudgedStatement
from domain.release_states import SemanticVerdict
from domain.states import ModelStepPurpose

if TYPE_CHECKING:
    from application.evidence import EvidenceGuard
    from application.harness import RunContext
    from domain.values import Fact


def judge(
    ctx: RunContext, statements: list[Fact], guard: EvidenceGuard
) -> tuple[JudgedStatement, ...]:
    """Ask the judge about ``statements`` (the conclusion first) and record its verdicts.

    Returns the statements as judged; their verdicts are None when the judge was unavailable.
    """
    ctx.check_active()
    ctx.run.attempt_semantic_guard()
    ctx.save()
    request = ModelRequest(
        ModelStepPurpose.JUDGE,
        (Message("system", JUDGE_PROMPT), Message("user", _payload(statements, guard))),
        json_schema=JUDGE_SCHEMA,
    )
    verdicts: list[SemanticVerdict] | None = None
    unavailable = ""
    try:
        verdicts = parse_verdicts(ctx.call_model(request).text, len(statements))
    except ModelError as error:
        unavailable = f"judge failed: {error}"
    except ValueError as error:
        unavailable = f"judge answered without a verdict for every statement: {error}"[:300]
    judged = tuple(
        JudgedStatement(fact.statement, fact.citations, verdicts[i] if verdicts else None)
        for i, fact in enumerate(statements)
    )
    ctx.run.decide_semantic_guard(judged[0].verdict, unavailable, judged)
    ctx.save()
    return judged


def parse_verdicts(text: str, count: int) -> list[SemanticVerdict]:
    """One verdict per statement ``0..count-1`` from the judge's answer, or ValueError why not."""
    try:
        answer = loads_json(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"not JSON: {error.msg}") from None
    items = answer.get("verdicts") if isinstance(answer, dict) else None
    if not isinstance(items, list):
        raise ValueError("no list of verdicts")
    found: dict[int, SemanticVerdict] = {}
    for item in items:
        index = item.get("statement") if isinstance(item, dict) else None
        verdict = item.get("verdict") if isinstance(item, dict) else None
        if type(index) is not int or not 0 <= index < count or index in found:
            raise ValueError(f"a verdict for no statement or a second one: {index!r}")
        found[index] = SemanticVerdict(verdict)  # ValueError for anything but the two words
    if len(found) != count:
        raise ValueError(f"{len(found)} verdicts for {count} statements")
    return [found[i] for i in range(count)]


def _payload(statements: list[Fact], guard: EvidenceGuard) -> str:
    cited = dict.fromkeys(c.reference for fact in statements for c in fact.citations)
    return json.dumps(
        {
            "statements": [
                {
                    "statement": index,
                    "text": fact.statement,
                    "citations": [
                        {"reference": c.reference, "excerpt": c.excerpt} for c in fact.citations
                    ],
                }
                for index, fact in enumerate(statements)
            ],
            "evidence": {reference: guard.content(reference) or "" for reference in cited},
        }
    )
