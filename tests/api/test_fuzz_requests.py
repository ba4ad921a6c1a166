"""Bad input at the HTTP door: hypothesis-generated requests never get a 5xx (issue 6, item 5).

One real uvicorn server (module-scoped, offline model, SQLite file) answers every example.
Generated: JSON bodies for ``POST /v1/chat`` and ``POST /v1/runs`` with wrong types, missing and
extra fields, odd queries (NULs, lone surrogates escaped in JSON, RTL marks, emoji, empty, huge),
negative, huge and non-finite budgets and deadlines, bad session ids; raw bodies that are not
JSON, JSON that is not an object, wrong content types; ``Last-Event-ID`` headers and run ids on
``GET /v1/runs/{id}/stream``. Every answer is either an error with a JSON body that says what was
wrong (and nothing recorded), or a run whose stream obeys SPEC §11.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx
import hypothesis
import pytest
from hypothesis import given
from hypothesis import strategies as st

from application.store import HarnessStore
from infrastructure.settings import Settings
from tests._fuzz import fuzz_settings
from tests.api._serve import Event, events, read_all, served_client
from tests.api.test_streams import QUESTION, check_feed
from tests.conftest import pg_schema

EXAMPLES = fuzz_settings(60)
FIELDS = ("query", "session_id", "budget", "deadline_s")
BUDGETS = ("model_calls", "tool_calls", "tokens", "bytes")
ODD_TEXT = (
    "\x00",
    "\ud800",  # a lone surrogate: json.dumps sends it as the escape \ud800
    "\udfff",
    "\ud83d\ude00",  # an escaped surrogate pair: one emoji once decoded
    "\u202eevil\u202c",
    "\u200f\u05e9\u05dc\u05d5\u05dd",
    "🔥🧯",
    "\u0085",
    "\ufeff",
    "\r\n",
    " ",
    "\\",
    '"',
    "x" * 5000,
    QUESTION,
    "hello",
)
"""Pieces of odd queries: control characters, surrogates, bidi marks, emoji, the limits."""
NUMBERS: st.SearchStrategy[Any] = st.one_of(
    st.integers(-(2**70), 2**70),
    st.sampled_from((0, -1, 1, 2, 10**9, 2**63, -(2**63))),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from((0.0, -0.0, 1e-300, 0.001, 5.0, 1e308)),
)
"""Numbers JSON can carry (and NaN / Infinity, which Python's encoder writes anyway)."""
SCALARS: st.SearchStrategy[Any] = st.one_of(
    st.none(), st.booleans(), NUMBERS, st.text(max_size=12), st.sampled_from(ODD_TEXT)
)
JSON_VALUES: st.SearchStrategy[Any] = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
QUERIES: st.SearchStrategy[str] = st.lists(
    st.one_of(st.sampled_from(ODD_TEXT), st.text(min_size=1, max_size=10)), min_size=1, max_size=4
).map("".join)
SESSIONS: st.SearchStrategy[Any] = st.one_of(
    st.from_regex(r"\A[A-Za-z0-9][A-Za-z0-9._:@-]{0,20}\Z"),
    st.sampled_from(("", " ", "has space", "s" * 201, "../etc", "ü", "\x00", "\ud800", "a\nb")),
    st.text(max_size=12),
    JSON_VALUES,
)


VALID_FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "query": QUERIES,
    "session_id": st.from_regex(r"\Afuzz-[a-z0-9]{1,6}\Z"),
    "budget": st.fixed_dictionaries({}, optional=dict.fromkeys(BUDGETS, st.integers(1, 20))),
    "deadline_s": st.floats(0.001, 120),
}
ODD_FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "query": JSON_VALUES,
    "session_id": SESSIONS,
    "budget": st.one_of(
        st.fixed_dictionaries({}, optional=dict.fromkeys(BUDGETS, st.one_of(NUMBERS, SCALARS))),
        st.fixed_dictionaries({"dollars": SCALARS}),
        JSON_VALUES,
    ),
    "deadline_s": st.one_of(NUMBERS, SCALARS),
    "colour": JSON_VALUES,
}


@st.composite
def bodies(draw: st.DrawFn) -> dict[str, Any]:
    """A run request: valid, or with one field odd, missing or too many.

    A body with one bad field says more than one with four, and valid ones start runs.
    """
    odd = draw(st.sampled_from(("none", "none", "none", "missing query", *ODD_FIELDS)))
    body = {"query": draw(QUERIES)}
    for name in ("session_id", "budget", "deadline_s"):
        if draw(st.booleans()):
            body[name] = draw(VALID_FIELDS[name])
    if odd == "missing query":
        del body["query"]
    elif odd != "none":
        body[odd] = draw(ODD_FIELDS[odd])
    return body


CONTENT_TYPES = (
    "application/json",
    "application/json; charset=latin-1",
    "text/plain",
    "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=x",
    "application/json-patch+json",
    None,
)
RAW_BODIES: st.SearchStrategy[bytes] = st.one_of(
    st.binary(max_size=64),
    st.sampled_from(
        (
            b"",
            b"{",
            b'{"query": "hello"',
            b'{"query": "\\ud800"}',
            b'{"query": "\xff\xfe"}',
            b'{"query": "hello", "query": 1}',
            b"[" * 5000,
            b'{"a":' * 3000,
            b"null",
            b'"hello"',
            b"NaN",
            b'{"query": "hello"}\x00',
            b"query=hello",
            '{"query": "h\u00e9llo"}'.encode("latin-1"),
        )
    ),
    JSON_VALUES.map(lambda v: json.dumps(v).encode()),
)
HEADER_TEXT = st.text(
    alphabet=st.characters(codec="latin-1", exclude_categories=["Cc"]), max_size=30
).map(lambda value: value.strip(" \t"))
"""What HTTP lets a header value hold (uvicorn answers control characters itself, in text)."""
EVENT_IDS: st.SearchStrategy[str] = st.one_of(
    st.integers(-(10**20), 10**20).map(str),
    st.sampled_from(
        (
            "",
            "0",
            "1",
            "3",
            "99",
            "2147483648",  # past an int4
            "9" * 18,
            "9" * 19,
            "1.5",
            "1e3",
            "0x10",
            "7\u00a0",
            "²",
            "1\u00b9",
        )
    ),
    HEADER_TEXT,
)


@dataclass(frozen=True)
class Served:
    """The module's server: a client for it, its store, and a run that has finished."""

    client: httpx.Client
    store: HarnessStore
    finished_run: str


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def served(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    """One server per backend for the whole module (hypothesis examples share it)."""
    if request.param == "sqlite":
        path = tmp_path_factory.mktemp("fuzz") / "harness.db"
        yield from _serve(Settings(database_url=f"sqlite:///{path}", max_concurrent_runs=64))
        return
    request.getfixturevalue("pg_available")
    with pg_schema(max_concurrent_runs=64) as settings:
        yield from _serve(settings)


def _serve(config: Settings) -> Iterator[Served]:
    with served_client(config) as served:
        client, store = served.client, served.store
        created = client.post("/v1/runs", json={"query": QUESTION})
        assert created.status_code == 202, created.text
        check_feed(read_all(client, "GET", created.json()["stream"]), "SUCCESS")
        yield Served(client, store, created.json()["run_id"])


# -- what every answer must be ---------------------------------------------------------------------


def _check_problem(response: httpx.Response, body: Any = None) -> None:
    """A 4xx whose JSON body names what was wrong (SPEC: never a 500 or a traceback)."""
    assert 400 <= response.status_code < 500, (response.status_code, response.text[:500])
    assert response.headers["content-type"] == "application/problem+json", response.headers
    assert response.json()["status"] == response.status_code
    detail = response.json()["detail"]
    assert "Traceback" not in response.text
    if response.status_code != 422:
        assert isinstance(detail, str) and detail.strip(), detail
        return
    assert isinstance(detail, list) and detail, detail
    for error in detail:
        assert error["msg"].strip() and error["loc"][0] in ("body", "path"), error
        if isinstance(body, dict) and len(error["loc"]) > 1 and error["type"] != "missing":
            assert error["loc"][1] in body, ("the error names a field that was not sent", error)


def _check_stream(client: httpx.Client, response: httpx.Response) -> list[Event]:
    """A 200 stream of a run: SPEC §11 order and one identity throughout."""
    assert response.headers["content-type"].startswith("text/event-stream")
    feed = list(events(response))
    assert feed, "an empty stream"
    check_feed(feed, feed[-1].data["release_outcome"])
    run = client.get(f"/v1/runs/{feed[0].data['run_id']}")
    assert run.status_code == 200, run.text
    assert run.json()["release_outcome"] == feed[-1].data["release_outcome"]
    return feed


def _post(served: Served, path: str, content: bytes, headers: dict[str, str], body: Any) -> None:
    """POST a run request; whatever comes back must be a run or a clear 4xx, never a 5xx."""
    client, head = served.client, served.store.head()
    with client.stream("POST", path, content=content, headers=headers) as response:
        if hypothesis.currently_in_test_context():
            hypothesis.event(f"{path} {response.status_code}")
        if response.status_code == 200:
            _check_stream(client, response)
            return
        response.read()
    if response.status_code == 202:
        feed = read_all(client, "GET", response.json()["stream"])
        check_feed(feed, feed[-1].data["release_outcome"])
        return
    _check_problem(response, body)
    assert served.store.head() == head, "a refused request recorded something"


# -- the properties --------------------------------------------------------------------------------


@EXAMPLES
@given(body=bodies(), path=st.sampled_from(("/v1/chat", "/v1/runs")))
def test_any_json_body_is_a_run_or_a_clear_4xx(
    served: Served, body: dict[str, Any], path: str
) -> None:
    # json.dumps, as any client would: escapes surrogates (\\ud800) and writes NaN / Infinity
    _post(served, path, json.dumps(body).encode(), {"content-type": "application/json"}, body)


@EXAMPLES
@given(
    content=RAW_BODIES,
    content_type=st.sampled_from(CONTENT_TYPES),
    path=st.sampled_from(("/v1/chat", "/v1/runs")),
)
def test_any_raw_body_is_a_run_or_a_clear_4xx(
    served: Served, content: bytes, content_type: str | None, path: str
) -> None:
    headers = {"content-type": content_type} if content_type else {}
    _post(served, path, content, headers, None)


@EXAMPLES
@given(
    last_event_id=EVENT_IDS,
    run=st.one_of(
        st.just("finished"),
        st.uuids().map(str),
        st.text(max_size=40).map(lambda s: quote(s, safe="")),
    ),
)
def test_any_stream_request_resumes_or_is_a_clear_4xx(
    served: Served, last_event_id: str, run: str
) -> None:
    client = served.client
    run_id = served.finished_run if run == "finished" else run
    headers = {b"Last-Event-ID": last_event_id.encode("latin-1")}
    with client.stream("GET", f"/v1/runs/{run_id}/stream", headers=headers) as response:
        if response.status_code not in (200, 204):
            response.read()
            _check_problem(response)
            return
        resumed = list(events(response))
    assert run == "finished", "a stream of a run that does not exist"
    full = read_all(client, "GET", f"/v1/runs/{run_id}/stream")
    after = int(last_event_id.strip() or 0)
    assert resumed == full[max(after, 0) :], (last_event_id, resumed)
    assert (response.status_code == 204) == (resumed == []), "204 when nothing more, ever"


# -- what the fuzzing found (each was a 500, or a run the read side could not show) -------------

JSON = {"content-type": "application/json"}


@pytest.mark.parametrize(
    ("content", "headers", "field"),
    [
        (b'{"query": "q", "deadline_s": NaN}', JSON, "deadline_s"),
        (b'{"query": "q", "deadline_s": -Infinity}', JSON, "deadline_s"),
        (b'{"query": "q", "budget": {"tokens": Infinity}}', JSON, "budget"),
        (b'{"query": "q", "session_id": "\\ud800"}', JSON, "session_id"),
        (b'{"query": "\\udfff?"}', JSON, "query"),
        (b"\xe1", {"content-type": "text/plain"}, None),
    ],
)
def test_inputs_json_cannot_carry_are_echoed_printably_in_the_422(
    served: Served, content: bytes, headers: dict[str, str], field: str | None
) -> None:
    """FastAPI's own 422 echoed them as they came and failed to render: a 500."""
    for path in ("/v1/runs", "/v1/chat"):
        answer = served.client.post(path, content=content, headers=headers)
        _check_problem(answer, json.loads(content) if field else None)
        assert answer.status_code == 422
        assert any(e["loc"][1:2] == ([field] if field else []) for e in answer.json()["detail"])


def test_a_nul_in_the_query_is_refused(served: Served) -> None:
    """PostgreSQL text cannot hold NUL: the run started, but its row never reached the tables."""
    head = served.store.head()
    for path in ("/v1/runs", "/v1/chat"):
        answer = served.client.post(path, json={"query": "why\x00 is checkout slow?"})
        _check_problem(answer, {"query": ""})
        assert "NUL" in answer.json()["detail"][0]["msg"]
    assert served.store.head() == head


@pytest.mark.parametrize("value", ["²", "1\u00b9", "\u00b3\u00b3"])
def test_a_last_event_id_of_digits_that_are_not_ascii_is_a_400(served: Served, value: str) -> None:
    """``str.isdigit`` holds for them and ``int`` refuses them: it was a 500."""
    headers = {b"Last-Event-ID": value.encode("latin-1")}
    answer = served.client.get(f"/v1/runs/{served.finished_run}/stream", headers=headers)
    _check_problem(answer)
    assert answer.status_code == 400 and "Last-Event-ID" in answer.json()["detail"]


@pytest.mark.parametrize("value", ["2147483648", "220557491716", "9" * 18])
def test_a_last_event_id_beyond_any_feed_resumes_after_its_end(served: Served, value: str) -> None:
    """On PostgreSQL the feed's int4 ``seq`` refused the number: the stream retried for a
    minute, then called the database unavailable. After a finished feed's end: 204."""
    url = f"/v1/runs/{served.finished_run}/stream"
    answer = served.client.get(url, headers={"Last-Event-ID": value})
    assert (answer.status_code, answer.content) == (204, b"")


def test_a_query_with_line_separators_streams_whole(served: Served) -> None:
    """U+2028, U+2029 and U+0085 are no line ends in an event stream (WHATWG): the data stays
    one line, and a client splitting as ``str.splitlines`` does would cut it."""
    query = "why\u2028is\u2029checkout\x85slow?"
    feed = read_all(served.client, "POST", "/v1/chat", json={"query": query})
    check_feed(feed, feed[-1].data["release_outcome"])
    assert feed[0].data["query"] == query
