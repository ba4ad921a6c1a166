"""The SemanticGuard: one judge call on exactly the statements that would be published.

The judge sees every statement (the conclusion first, then each verified fact) with its
citations and the content of every result they cite, and answers per statement. Its answer is
strict: one verdict for every statement, nothing else; anything less makes the guard
unavailable. The statements are recorded exactly as judged, so the verifier can check that
what was published is what was judged SUPPORTED.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from application.drafts import loads_json
from application.ports import Message, ModelError, ModelOutputTooLarge, ModelRequest
from application.prompts import JUDGE_PROMPT, JUDGE_SCHEMA
from domain.grounding import JudgedStatement
from domain.reasons import UnusableAnswer, answer_reason, failed_reason
from domain.release_states import SemanticVerdict
from domain.states import ModelStepPurpose

if TYPE_CHECKING:
    from collections.abc import Sequence

    from application.evidence import EvidenceGuard
    from application.release_context import ReleaseContext
    from domain.values import Fact


def judge(
    ctx: ReleaseContext, statements: list[Fact], guard: EvidenceGuard
) -> tuple[JudgedStatement, ...]:
    """Ask the judge about ``statements`` (the conclusion first) and record its verdicts.

    Returns the statements as judged; their verdicts are None when the judge was unavailable.
    """
    ctx.check_active()
    ctx.run.attempt_semantic_guard()
    ctx.journal.record()
    request = ModelRequest(
        ModelStepPurpose.JUDGE,
        (Message("system", JUDGE_PROMPT), Message("user", _payload(statements, guard))),
        json_schema=JUDGE_SCHEMA,
    )
    verdicts, unavailable = _verdicts(ctx, request, len(statements))
    judged = tuple(
        JudgedStatement(fact.statement, fact.citations, verdicts[i] if verdicts else None)
        for i, fact in enumerate(statements)
    )
    ctx.run.decide_semantic_guard(judged[0].verdict, unavailable, judged)
    ctx.journal.record()
    return judged


def parse_verdicts(text: str, count: int) -> list[SemanticVerdict]:
    """One verdict per statement ``0..count-1`` from the judge's answer, or ValueError why not.

    The ValueError's message is an :class:`UnusableAnswer` code, never the answer's text.

    The answer must be exactly what ``JUDGE_SCHEMA`` allows: no key named twice in an object
    (``json`` would keep the last, so a verdict could be taken back unseen), no key the schema
    does not name (a verdict carrying a claim of its own answers for another statement).
    """
    try:
        answer = loads_json(text, object_pairs_hook=_once_each)
    except json.JSONDecodeError:
        raise ValueError(UnusableAnswer.NOT_JSON.value) from None
    if not isinstance(answer, dict) or not set(answer) <= _ANSWER_KEYS:
        raise ValueError(UnusableAnswer.NOT_VERDICTS.value)
    items = answer.get("verdicts")
    if not isinstance(items, list):
        raise ValueError(UnusableAnswer.NO_VERDICT_LIST.value)
    found: dict[int, SemanticVerdict] = {}
    for item in items:
        if not isinstance(item, dict) or set(item) != _VERDICT_KEYS:
            raise ValueError(UnusableAnswer.MALFORMED_VERDICT.value)
        index, verdict = item["statement"], item["verdict"]
        if type(index) is not int or not 0 <= index < count or index in found:
            raise ValueError(UnusableAnswer.VERDICT_FOR_NO_STATEMENT.value)
        if verdict not in _VERDICT_WORDS:
            raise ValueError(UnusableAnswer.UNKNOWN_VERDICT.value)
        found[index] = SemanticVerdict(verdict)
    if len(found) != count:
        raise ValueError(UnusableAnswer.VERDICT_MISSING.value)
    return [found[i] for i in range(count)]


_ANSWER_KEYS = frozenset({"verdicts", "reason"})
_VERDICT_KEYS = frozenset({"statement", "verdict"})
_VERDICT_WORDS = frozenset(verdict.value for verdict in SemanticVerdict)


def _code(error: ValueError) -> UnusableAnswer:
    """The code a parse failure carries (a ValueError from elsewhere: not JSON as asked)."""
    return UnusableAnswer.__members__.get(str(error), UnusableAnswer.NOT_JSON)


def _once_each(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are each named once, or ValueError (KEY_REPEATED)."""
    answer = dict(pairs)
    if len(answer) != len(pairs):
        raise ValueError(UnusableAnswer.KEY_REPEATED.value)
    return answer


def _payload(statements: list[Fact], guard: EvidenceGuard) -> str:
    cited = dict.fromkeys(c.reference for fact in statements for c in fact.citations)
    return json.dumps(
        {
            "statements": numbered(statements),
            "evidence": {reference: guard.content(reference) or "" for reference in cited},
        }
    )


def numbered(statements: Sequence[Fact]) -> list[dict[str, Any]]:
    """The statements as the judge reads them: numbered from 0, each with its citations."""
    return [
        {
            "statement": index,
            "text": fact.statement,
            "citations": [{"reference": c.reference, "excerpt": c.excerpt} for c in fact.citations],
        }
        for index, fact in enumerate(statements)
    ]


def ask_for_verdicts(
    ctx: ReleaseContext, system: str, payload: str, count: int
) -> tuple[list[SemanticVerdict] | None, str]:
    """One JUDGE call: a verdict for each of ``count`` statements, or None and why not.

    The reason is a code and the answer's length, never the answer's words (diagnostics lines
    show it); the model step records the call.
    """
    request = ModelRequest(
        ModelStepPurpose.JUDGE,
        (Message("system", system), Message("user", payload)),
        json_schema=JUDGE_SCHEMA,
    )
    return _verdicts(ctx, request, count)


def _verdicts(
    ctx: ReleaseContext, request: ModelRequest, count: int
) -> tuple[list[SemanticVerdict] | None, str]:
    """The judge's verdicts on ``count`` statements, or None and why: a code and a length.

    Why not is never the judge's words (diagnostics lines show it, design §10.1).
    """
    text = ""
    try:
        text = ctx.call_model(request).text
        return parse_verdicts(text, count), ""
    except ModelOutputTooLarge as error:
        return None, answer_reason(UnusableAnswer.TOO_LARGE, error.length)
    except ModelError as error:
        return None, failed_reason(error)
    except ValueError as error:
        return None, answer_reason(_code(error), len(text))
