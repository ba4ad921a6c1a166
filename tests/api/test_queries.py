"""Queries over real HTTP: run listings narrow and page as asked; quiet streams keep alive."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from infrastructure.settings import Settings
from tests.api._serve import read_all, served_client
from tests.api.test_streams import HANGS, QUESTION

HELLO = "hello"


@pytest.fixture
def client(sqlite_settings: Settings) -> Iterator[httpx.Client]:
    with served_client(sqlite_settings) as served:
        http = served.client
        yield http


def _finished(http: httpx.Client, query: str, session: str) -> str:
    created = http.post("/v1/runs", json={"query": query, "session_id": session}).json()
    read_all(http, "GET", created["stream"])
    run_id: str = created["run_id"]
    return run_id


def _ids(http: httpx.Client, query: str) -> list[str]:
    answer = http.get(f"/v1/runs?{query}")
    assert answer.status_code == 200, answer.text
    return [run["run_id"] for run in answer.json()["data"]]


def test_listings_filter_by_session_outcome_state_and_time_and_page(
    client: httpx.Client,
) -> None:
    chat_a = _finished(client, HELLO, "sess-a")
    diagnosis_a = _finished(client, QUESTION, "sess-a")
    chat_b = _finished(client, HELLO, "sess-b")

    assert _ids(client, "") == [chat_b, diagnosis_a, chat_a]  # newest first
    assert _ids(client, "session_id=sess-a") == [diagnosis_a, chat_a]
    assert _ids(client, "session_id=sess-b&release_outcome=SUCCESS") == [chat_b]
    assert _ids(client, "status=SUCCESS&state=SUCCESS") == [chat_b, diagnosis_a, chat_a]
    assert _ids(client, "status=CANCELLED") == []
    assert _ids(client, "release_outcome=FALLBACK") == []
    later = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    assert _ids(client, f"created_after={later.replace('+', '%2B')}") == []
    assert _ids(client, f"created_before={later.replace('+', '%2B')}") == [
        chat_b,
        diagnosis_a,
        chat_a,
    ]
    page = client.get("/v1/runs?limit=2&offset=1").json()
    assert ([r["run_id"] for r in page["data"]], page["count"], page["limit"], page["offset"]) == (
        [diagnosis_a, chat_a],
        3,
        2,
        1,
    )
    assert _ids(client, "intent=DIAGNOSIS") == [diagnosis_a]
    assert _ids(client, "intent=SYSTEM_CHAT&session_id=sess-a") == [chat_a]
    assert _ids(client, "intent=KNOWLEDGE_QUERY") == []
    session = client.get("/v1/sessions/sess-a").json()
    assert [t["run_id"] for t in session["data"]] == [chat_a, diagnosis_a]
    assert [t["turn"] for t in session["data"]] == [1, 2]


def test_cursor_pages_cover_every_run_once_and_say_where_they_end(client: httpx.Client) -> None:
    made = [_finished(client, HELLO, "sess-c") for _ in range(3)]
    seen: list[str] = []
    path = "/v1/runs?limit=2"
    while path:
        page = client.get(path).json()
        assert (page["count"], page["count_capped"]) == (3, False)
        seen += [run["run_id"] for run in page["data"]]
        following = page["next_cursor"]
        path = f"/v1/runs?limit=2&cursor={following}" if following else ""
    assert seen == made[::-1]
    newest = client.get("/v1/runs?limit=1").json()["next_cursor"]
    _finished(client, HELLO, "sess-c")  # a run created meanwhile shifts no cursor page
    after = client.get(f"/v1/runs?limit=2&cursor={newest}").json()
    assert [run["run_id"] for run in after["data"]] == made[1::-1]
    assert after["next_cursor"] is None


@pytest.mark.parametrize(
    ("query", "status"),
    [
        ("cursor=bm90IGEgY3Vyc29y", 400),  # the right shape, but no listing gave it
        ("offset=1&cursor={cursor}", 400),
        ("cursor=%25%25", 422),  # not the shape of a cursor: refused at the door
        ("cursor=", 422),
        ("cursor=ab%00cd", 422),
    ],
)
def test_a_cursor_the_listing_did_not_give_is_refused_naming_it(
    client: httpx.Client, query: str, status: int
) -> None:
    _finished(client, HELLO, "sess-d")
    _finished(client, HELLO, "sess-d")
    cursor = client.get("/v1/runs?limit=1").json()["next_cursor"]
    answer = client.get("/v1/runs?" + query.format(cursor=cursor))
    assert answer.status_code == status, answer.text
    assert "cursor" in str(answer.json()["detail"])


@pytest.mark.parametrize("intent", ["diagnosis", "CHAT", "", "DIAGNOSIS\u0000"])
def test_an_intent_that_is_not_one_is_a_422_naming_the_intents(
    client: httpx.Client, intent: str
) -> None:
    answer = client.get("/v1/runs", params={"intent": intent})
    assert answer.status_code == 422, answer.text
    (error,) = answer.json()["detail"]
    assert error["loc"] == ["query", "intent"]
    assert "'SYSTEM_CHAT', 'KNOWLEDGE_QUERY' or 'DIAGNOSIS'" in error["msg"]


def test_a_quiet_stream_sends_keep_alive_comments(sqlite_settings: Settings) -> None:
    settings = sqlite_settings.model_copy(update={"model": HANGS, "sse_keepalive": 0.1})
    with served_client(settings, sample=False) as served:
        http = served.client
        run_id = http.post("/v1/runs", json={"query": QUESTION}).json()["run_id"]
        comments, data = 0, []
        with http.stream("GET", f"/v1/runs/{run_id}/stream") as response:
            for line in response.iter_lines():
                if line.startswith("data:"):
                    data.append(line)
                elif line.startswith(":"):
                    comments += 1
                    if comments == 2:  # the run hangs: the stream stays open, and alive
                        assert http.post(f"/v1/runs/{run_id}/cancel").status_code == 200
        assert comments >= 2
        assert '"release_outcome":"CANCELLED"' in data[-1]
