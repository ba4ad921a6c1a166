"""The OpenAPI description of the errors: each route's error responses, as RFC 9457 problems.

``error_responses`` gives a route's documented error codes; ``document_problems`` turns what
FastAPI writes as ``application/json`` into ``application/problem+json`` (``api.errors``
answers every error that way) and drops the string schema FastAPI gives an event stream.
"""

from __future__ import annotations

from typing import Any

from api.errors import PROBLEM_JSON
from api.schemas import ProblemPublic


def error_responses(*codes: int, streaming: bool = False) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` entries for the error codes a route may answer.

    Errors are problems (:data:`PROBLEM_JSON`); for a streaming route (whose own media type is
    ``text/event-stream``) the content is spelled out, or the document would give them the
    stream's media type. :func:`document_problems` gives the others their media type.
    """
    described = {
        400: "A malformed header or parameter",
        401: "No API key, or one that is not valid",
        403: "The caller's role may not do this",
        404: "No such run or session, or not the caller's",
        409: "Another audit verification is running on this worker; retry when it has finished",
        413: "The request body is too large",
        429: "This worker runs its maximum of runs (or sends its maximum of event streams); retry"
        " after Retry-After seconds",
        503: "The database is unavailable; retry after Retry-After seconds",
    }
    if streaming:
        problem_json = {PROBLEM_JSON: {"schema": {"$ref": PROBLEM_REF}}}
        return {code: {"content": problem_json, "description": described[code]} for code in codes}
    return {code: {"model": ProblemPublic, "description": described[code]} for code in codes}


PROBLEM_REF = "#/components/schemas/ProblemPublic"
PROBLEM_MEMBERS = {
    "type": {"type": "string", "title": "Type", "default": "about:blank"},
    "title": {"type": "string", "title": "Title"},
    "status": {"type": "integer", "title": "Status"},
}
"""RFC 9457's members besides ``detail``, as FastAPI's own 422 schema gets them too."""


def document_problems(document: dict[str, Any]) -> dict[str, Any]:
    """Every error response of ``document`` as ``application/problem+json``, with its members.

    FastAPI describes error bodies as ``application/json`` (its 422 included); the service
    answers them as problems, so the document says so, and the validation error's schema gets
    the members the 422 carries besides its list of field errors. An event stream described by
    its ``itemSchema`` loses the ``schema`` FastAPI adds (a string), which OpenAPI 3.2 would
    read as the type of the whole sequence of events.
    """
    for operations in document.get("paths", {}).values():
        for operation in operations.values():
            for code, response in operation.get("responses", {}).items():
                content = response.get("content", {})
                if code[:1] in "45" and "application/json" in content:
                    content[PROBLEM_JSON] = content.pop("application/json")
                stream = content.get("text/event-stream", {})
                if "itemSchema" in stream:  # FastAPI's string schema would type the sequence
                    stream.pop("schema", None)
    schemas = document.get("components", {}).get("schemas", {})
    validation = schemas.get("HTTPValidationError")
    if validation is not None:
        validation["properties"] = PROBLEM_MEMBERS | validation.get("properties", {})
        validation["required"] = ["title", "status", "detail"]
    return document
