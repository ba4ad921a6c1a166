"""API keys and roles over real HTTP: every route, every role, every owner.

With keys configured every route but ``/healthz`` and ``/readyz`` asks for one (401 with the Bearer
challenge). A user starts runs and sees only their own runs and sessions: another's answer 404 and
are absent from listings. An auditor reads everything and writes nothing (403, nothing recorded).
An admin may do everything, rebuilding the projections too. With no keys, the local principal may
do everything and owns the runs it starts. No response ever carries a key.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from api.auth import LOCAL, Role
from api.main import create_app
from application.audit.records import store_records
from application.eval_records import record_eval
from application.store import HarnessStore
from bootstrap.composition import Overrides, bootstrap
from infrastructure.settings import ApiKey, Settings
from projections.live import LiveProjections
from tests.api._serve import Event, events, served_client
from tests.eval_reports import BEFORE, BEFORE_ID

ANN, BOB, AUDREY, ADAM = "ann", "bob", "audrey", "adam"
ROLES: dict[str, Role] = {ANN: "user", BOB: "user", AUDREY: "auditor", ADAM: "admin"}
KEYS = {name: f"{name}-{role}-key-5f0c9a4b2e7d1c38" for name, role in ROLES.items()}
UNKNOWN_KEY = "nobody-user-key-9e8d7c6b5a4f3e21"
"""A well-formed key that no one holds."""
SECRETS = {**KEYS, "the unknown": UNKNOWN_KEY}
"""Every key any request of this module sends: none may come back in a response."""


@dataclass(frozen=True)
class Route:
    """One route of the API, its path as the app declares it."""

    method: str
    path: str

    def __str__(self) -> str:
        return f"{self.method} {self.path}"


CHAT = Route("POST", "/v1/chat")
CREATE = Route("POST", "/v1/runs")
LIST = Route("GET", "/v1/runs")
GET_RUN = Route("GET", "/v1/runs/{run_id}")
STREAM = Route("GET", "/v1/runs/{run_id}/stream")
CANCEL = Route("POST", "/v1/runs/{run_id}/cancel")
TRACE = Route("GET", "/v1/runs/{run_id}/trace")
EXPLAIN = Route("GET", "/v1/runs/{run_id}/explain")
SESSION = Route("GET", "/v1/sessions/{session_id}")
PROJECTIONS = Route("GET", "/v1/projections")
REBUILD = Route("POST", "/v1/projections/rebuild")
AUDIT = Route("GET", "/v1/audit/events")
VERIFY = Route("POST", "/v1/audit/verify")
DAILY = Route("GET", "/v1/stats/daily")
TOOL_STATS = Route("GET", "/v1/stats/tools")
MODEL_STATS = Route("GET", "/v1/stats/models")
WORKERS = Route("GET", "/v1/workers")
TOOLS = Route("GET", "/v1/tools")
MODEL_CHECK = Route("GET", "/v1/model/check")
EVALS = Route("GET", "/v1/evals")
GET_EVAL = Route("GET", "/v1/evals/{eval_id}")
HEALTHZ = Route("GET", "/healthz")
READYZ = Route("GET", "/readyz")
METRICS = Route("GET", "/metrics")

ROUTES = (
    CHAT,
    CREATE,
    LIST,
    GET_RUN,
    STREAM,
    CANCEL,
    TRACE,
    EXPLAIN,
    SESSION,
    PROJECTIONS,
    REBUILD,
    AUDIT,
    VERIFY,
    DAILY,
    TOOL_STATS,
    MODEL_STATS,
    WORKERS,
    TOOLS,
    MODEL_CHECK,
    EVALS,
    GET_EVAL,
    HEALTHZ,
    READYZ,
    METRICS,
)
PUBLIC = (HEALTHZ, READYZ)
PROTECTED = tuple(r for r in ROUTES if r not in PUBLIC)
STARTS = (CHAT, CREATE)
OWNED = (GET_RUN, STREAM, TRACE, EXPLAIN, CANCEL, SESSION)
"""The routes about one run or session: they answer only its owner and the readers of all."""


def question(name: str) -> str:
    """A query only ``name`` asks (a greeting: the offline model answers it at once)."""
    return f"hello there, {name} speaking"


def who(name: str | None) -> str:
    """A caller as failure messages name it."""
    return "no key" if name is None else f"{name} ({ROLES[name]})"


@dataclass(frozen=True)
class Started:
    """A run that has ended, and the session it belongs to."""

    run_id: str
    session_id: str


@dataclass(frozen=True)
class Server:
    """A running service, a client to it, and one finished run per user."""

    client: httpx.Client
    store: HarnessStore
    runs: dict[str, Started]

    def url(self, route: Route, owner: str) -> str:
        """``route``'s path about ``owner``'s run or session."""
        run = self.runs[owner]
        return route.path.format(run_id=run.run_id, session_id=run.session_id, eval_id=BEFORE_ID)


def bearer(key: str) -> str:
    """An Authorization header value."""
    return f"Bearer {key}"


def send(
    client: httpx.Client,
    route: Route,
    url: str,
    authorization: str | None,
    context: str,
    body: dict[str, Any] | None = None,
    params: dict[str, str] | None = None,
) -> httpx.Response:
    """Send one request, read its body to the end, and check that it carries no key."""
    headers = {} if authorization is None else {"Authorization": authorization}
    response = client.request(route.method, url, headers=headers, json=body, params=params)
    head = "\n".join(f"{name}: {value}" for name, value in response.headers.multi_items())
    for holder, key in SECRETS.items():
        assert key not in response.text, f"{context}: the body carries {holder}'s key"
        assert key not in head, f"{context}: a header carries {holder}'s key"
    return response


def send_as(
    server: Server, route: Route, caller: str | None, owner: str = ANN, **kw: Any
) -> httpx.Response:
    """``route`` about ``owner``'s run or session, with ``caller``'s key (None: no key)."""
    authorization = None if caller is None else bearer(KEYS[caller])
    context = f"{route} as {who(caller)} on {owner}'s"
    return send(server.client, route, server.url(route, owner), authorization, context, **kw)


def feed_of(response: httpx.Response, context: str) -> list[Event]:
    """A complete event stream, checked to have ended with ``done``."""
    assert response.status_code == 200, f"{context}: {response.status_code} {response.text}"
    assert response.headers["content-type"].startswith("text/event-stream"), context
    feed = list(events(response))
    assert [feed[0].event, feed[-1].event] == ["metadata", "done"], f"{context}: {feed}"
    return feed


def start(
    client: httpx.Client,
    route: Route,
    caller: str | None,
    session_id: str | None = None,
) -> Started:
    """Start a run with ``route`` (chat or runs) as ``caller`` and read its feed to the end."""
    authorization = None if caller is None else bearer(KEYS[caller])
    context = f"{route} as {who(caller)}"
    body: dict[str, Any] = {"query": question(caller or LOCAL)}
    if session_id is not None:
        body["session_id"] = session_id
    response = send(client, route, route.path, authorization, context, body)
    if route == CHAT:
        feed = feed_of(response, context)
    else:
        assert response.status_code == 202, f"{context}: {response.status_code} {response.text}"
        stream = response.json()["stream"]
        feed = feed_of(send(client, STREAM, stream, authorization, context), context)
    run = Started(feed[0].data["run_id"], feed[0].data["session_id"])
    if session_id is not None:
        assert run.session_id == session_id, context
    return run


def _settings(folder: Path, keys: list[ApiKey]) -> Settings:
    return Settings(database_url=f"sqlite:///{folder / 'harness.db'}", api_keys=keys)


def _keys() -> list[ApiKey]:
    return [ApiKey(key=SecretStr(KEYS[n]), name=n, role=r) for n, r in ROLES.items()]


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One server with the four keys; ann's run (POST /v1/runs, her own session id) and bob's
    (POST /v1/chat, a new session), both ended."""
    settings = _settings(tmp_path_factory.mktemp("keyed"), _keys())
    with served_client(settings) as served:
        client, store = served.client, served.store
        runs = {
            ANN: start(client, CREATE, ANN, session_id="ann-session"),
            BOB: start(client, CHAT, BOB),
        }
        record_eval(store, BEFORE)  # an evaluation `harness eval` recorded: no one's run
        yield Server(client, store, runs)


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One server without keys, and one ended run of the local principal."""
    settings = _settings(tmp_path_factory.mktemp("local"), [])
    with served_client(settings) as served:
        client, store = served.client, served.store
        record_eval(store, BEFORE)
        yield Server(client, store, {LOCAL: start(client, CREATE, None)})


# -- the route table is the app's ------------------------------------------------------------------


def test_the_table_names_every_route_the_app_serves(tmp_path: Path) -> None:
    app = create_app(_settings(tmp_path, []))  # built, never started: nothing is opened
    paths = app.openapi()["paths"]
    served = {(method.upper(), path) for path, item in paths.items() for method in item}
    assert served == {(r.method, r.path) for r in ROUTES}


# -- with keys: who may knock ----------------------------------------------------------------------

CREDENTIALS = {
    "no key": None,
    "an unknown key": bearer(UNKNOWN_KEY),
    "a valid key, not as Bearer": f"Basic {KEYS[ADAM]}",
    "a Bearer without a key": "Bearer",
}


@pytest.mark.parametrize("credentials", CREDENTIALS)
@pytest.mark.parametrize("route", PROTECTED, ids=str)
def test_every_route_but_health_refuses_a_missing_or_wrong_key_with_401(
    keyed: Server, route: Route, credentials: str
) -> None:
    context = f"{route} with {credentials}"
    head = keyed.store.head()
    body = {"query": question(ANN)} if route in STARTS else None
    response = send(
        keyed.client, route, keyed.url(route, ANN), CREDENTIALS[credentials], context, body
    )
    assert response.status_code == 401, f"{context}: {response.status_code} {response.text}"
    assert response.headers.get("www-authenticate") == "Bearer", context
    assert response.json()["detail"], context
    assert question(ANN) not in response.text, f"{context}: ann's run leaked"
    assert keyed.store.head() == head, f"{context}: something was recorded"


@pytest.mark.parametrize("caller", [None, ANN, AUDREY, ADAM])
@pytest.mark.parametrize("route", PUBLIC, ids=str)
def test_health_and_readiness_are_public(keyed: Server, route: Route, caller: str | None) -> None:
    response = send_as(keyed, route, caller)
    assert response.status_code == 200, f"{route} as {who(caller)}: {response.text}"
    assert response.json()["status"] in ("ok", "ready"), f"{route} as {who(caller)}"


# -- with keys: one run or session, by caller and owner --------------------------------------------

# caller, whose:       GET_RUN STREAM TRACE EXPLAIN CANCEL SESSION
OWNED_ACCESS: dict[tuple[str, str], tuple[int, ...]] = {
    (ANN, ANN): (200, 200, 200, 200, 200, 200),
    (ANN, BOB): (404, 404, 404, 404, 404, 404),
    (BOB, BOB): (200, 200, 200, 200, 200, 200),
    (BOB, ANN): (404, 404, 404, 404, 404, 404),
    (AUDREY, ANN): (200, 200, 200, 200, 403, 200),
    (AUDREY, BOB): (200, 200, 200, 200, 403, 200),
    (ADAM, ANN): (200, 200, 200, 200, 200, 200),
    (ADAM, BOB): (200, 200, 200, 200, 200, 200),
}


def _owned_cases() -> list[Any]:
    return [
        pytest.param(route, caller, owner, status, id=f"{route} as {caller} on {owner}'s")
        for (caller, owner), statuses in OWNED_ACCESS.items()
        for route, status in zip(OWNED, statuses, strict=True)
    ]


def check_subject(route: Route, response: httpx.Response, run: Started, owner: str) -> None:
    """A 200 answer is about the run or session asked for (and names its owner)."""
    context = f"{route} on {owner}'s"
    if route == STREAM:
        assert feed_of(response, context)[0].data["run_id"] == run.run_id, context
        return
    body = response.json()
    if route == SESSION:
        assert (body["session_id"], body["owner"]) == (run.session_id, owner), context
        assert run.run_id in {turn["run_id"] for turn in body["data"]}, context
        return
    assert body["run_id"] == run.run_id, context
    if route == GET_RUN:
        assert body["owner"] == owner, context
    if route == TRACE:
        assert body["count"] == len(body["data"]) > 0, context
    if route == CANCEL:
        assert (body["cancelled"], body["termination_reason"]) == (False, "COMPLETED"), context


@pytest.mark.parametrize(("route", "caller", "owner", "status"), _owned_cases())
def test_a_run_or_session_answers_its_owner_and_the_readers_of_all(
    keyed: Server, route: Route, caller: str, owner: str, status: int
) -> None:
    context = f"{route} as {who(caller)} on {owner}'s"
    head = keyed.store.head()
    response = send_as(keyed, route, caller, owner)
    assert response.status_code == status, f"{context}: {response.status_code} {response.text}"
    if status == 200:
        check_subject(route, response, keyed.runs[owner], owner)
        return
    assert response.json()["detail"], context
    assert question(owner) not in response.text, f"{context}: {owner}'s query leaked"
    assert keyed.store.head() == head, f"{context}: something was recorded"


# -- with keys: listings ---------------------------------------------------------------------------


def listing(server: Server, caller: str, **params: str) -> dict[str, Any]:
    """GET /v1/runs as ``caller``: the whole list (the module has far fewer than a page)."""
    context = f"{LIST} as {who(caller)} {params}"
    response = send_as(server, LIST, caller, params={"limit": "200", **params})
    assert response.status_code == 200, f"{context}: {response.text}"
    found: dict[str, Any] = response.json()
    assert found["count"] == len(found["data"]), f"{context}: count {found['count']}"
    return found


@pytest.mark.parametrize("caller", [ANN, BOB, AUDREY, ADAM])
def test_a_listing_shows_a_user_their_own_runs_and_the_readers_every_run(
    keyed: Server, caller: str
) -> None:
    context = f"{LIST} as {who(caller)}"
    every = listing(keyed, ADAM)["data"]
    assert {keyed.runs[ANN].run_id, keyed.runs[BOB].run_id} <= {r["run_id"] for r in every}
    seen = listing(keyed, caller)["data"]
    if ROLES[caller] == "user":
        other = BOB if caller == ANN else ANN
        expected = {r["run_id"] for r in every if r["owner"] == caller}
        assert keyed.runs[other].run_id not in {r["run_id"] for r in seen}, context
        assert {r["owner"] for r in seen} == {caller}, context
    else:
        expected = {r["run_id"] for r in every}
    assert {r["run_id"] for r in seen} == expected, context
    assert keyed.runs[ANN if caller == ANN else BOB].run_id in expected, context


@pytest.mark.parametrize(("caller", "owner"), [(BOB, ANN), (ANN, BOB)])
def test_filtering_a_listing_by_another_users_session_finds_nothing(
    keyed: Server, caller: str, owner: str
) -> None:
    session = keyed.runs[owner].session_id
    assert listing(keyed, AUDREY, session_id=session)["count"] >= 1, f"{owner}'s session"
    found = listing(keyed, caller, session_id=session)
    assert (found["count"], found["data"]) == (0, []), f"{LIST} as {who(caller)} on {owner}'s"


# -- with keys: writes -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("route", "caller"),
    [(CHAT, ANN), (CREATE, ANN), (CHAT, BOB), (CREATE, BOB), (CHAT, ADAM), (CREATE, ADAM)],
    ids=lambda v: str(v),
)
def test_users_and_admins_start_runs_that_they_own(
    keyed: Server, route: Route, caller: str
) -> None:
    context = f"{route} as {who(caller)}"
    run = start(keyed.client, route, caller)
    url = GET_RUN.path.format(run_id=run.run_id)
    mine = send(keyed.client, GET_RUN, url, bearer(KEYS[caller]), context)
    assert (mine.status_code, mine.json()["owner"]) == (200, caller), context
    stranger = ANN if caller != ANN else BOB
    theirs = send(keyed.client, GET_RUN, url, bearer(KEYS[stranger]), context)
    assert theirs.status_code == 404, f"{context}: {stranger} sees the run"


@pytest.mark.parametrize("route", STARTS, ids=str)
def test_a_user_continues_their_own_session(keyed: Server, route: Route) -> None:
    context = f"{route} as {who(ANN)} into her session"
    session = keyed.runs[ANN].session_id
    run = start(keyed.client, route, ANN, session_id=session)
    turns = send_as(keyed, SESSION, ANN).json()["data"]
    assert run.run_id in {t["run_id"] for t in turns}, context


@pytest.mark.parametrize(("caller", "owner"), [(ANN, BOB), (BOB, ANN)])
@pytest.mark.parametrize("route", STARTS, ids=str)
def test_posting_into_another_users_session_is_404_and_records_nothing(
    keyed: Server, route: Route, caller: str, owner: str
) -> None:
    context = f"{route} as {who(caller)} into {owner}'s session"
    head = keyed.store.head()
    body = {"query": question(caller), "session_id": keyed.runs[owner].session_id}
    response = send_as(keyed, route, caller, owner, body=body)
    assert response.status_code == 404, f"{context}: {response.status_code} {response.text}"
    assert question(owner) not in response.text, f"{context}: {owner}'s query leaked"
    assert keyed.store.head() == head, f"{context}: something was recorded"


@pytest.mark.parametrize(("caller", "owner"), [(ANN, BOB), (BOB, ANN)])
def test_another_users_session_is_answered_as_one_that_does_not_exist(
    keyed: Server, caller: str, owner: str
) -> None:
    # No oracle: whether a session id is taken by someone else is not told apart from
    # "there is no such session of yours", by any route, in status or in words.
    theirs, never = keyed.runs[owner].session_id, "a-session-no-one-ever-used"
    key = bearer(KEYS[caller])
    body = {"query": question(caller), "session_id": theirs}
    answers = {
        f"{SESSION} of {owner}'s": send(keyed.client, SESSION, f"/v1/sessions/{theirs}", key, ""),
        f"{SESSION} of none": send(keyed.client, SESSION, f"/v1/sessions/{never}", key, ""),
        f"{CHAT} into {owner}'s": send(keyed.client, CHAT, CHAT.path, key, "", body),
        f"{CREATE} into {owner}'s": send(keyed.client, CREATE, CREATE.path, key, "", body),
    }
    details = set()
    for context, response in answers.items():
        assert response.status_code == 404, f"{context}: {response.status_code} {response.text}"
        detail = response.json()["detail"]
        assert theirs in detail or never in detail, f"{context}: {detail}"
        details.add(detail.replace(theirs, "<id>").replace(never, "<id>"))
    assert len(details) == 1, details


REFUSED_WRITES = [
    (CHAT, AUDREY),
    (CREATE, AUDREY),
    (CANCEL, AUDREY),
    (REBUILD, AUDREY),
    (REBUILD, ANN),
    (REBUILD, BOB),
    (MODEL_CHECK, AUDREY),  # it calls the model: an admin's to ask for
    (MODEL_CHECK, ANN),
    (MODEL_CHECK, BOB),
]


@pytest.mark.parametrize(("route", "caller"), REFUSED_WRITES, ids=lambda v: str(v))
def test_writes_beyond_the_role_are_403_and_record_nothing(
    keyed: Server, route: Route, caller: str
) -> None:
    context = f"{route} as {who(caller)}"
    head = keyed.store.head()
    before = send_as(keyed, PROJECTIONS, ADAM).json()
    body = {"query": question(caller)} if route in STARTS else None
    response = send_as(keyed, route, caller, ANN, body=body)
    assert response.status_code == 403, f"{context}: {response.status_code} {response.text}"
    assert ROLES[caller] in response.json()["detail"], context
    assert keyed.store.head() == head, f"{context}: something was recorded"
    assert send_as(keyed, PROJECTIONS, ADAM).json() == before, f"{context}: projections changed"
    assert send_as(keyed, GET_RUN, ADAM).json()["termination_reason"] == "COMPLETED", context


@pytest.mark.parametrize("caller", [ANN, BOB, AUDREY, ADAM])
def test_every_role_reads_the_projections(keyed: Server, caller: str) -> None:
    response = send_as(keyed, PROJECTIONS, caller)
    context = f"{PROJECTIONS} as {who(caller)}"
    assert response.status_code == 200, f"{context}: {response.text}"
    body = response.json()
    assert body["head"] == keyed.store.head(), context
    assert body["data"] and all(p["lag"] == 0 for p in body["data"]), f"{context}: {body}"


@pytest.mark.parametrize("caller", [ANN, BOB, AUDREY, ADAM])
def test_every_role_reads_the_tools(keyed: Server, caller: str) -> None:
    response = send_as(keyed, TOOLS, caller)
    context = f"{TOOLS} as {who(caller)}"
    assert response.status_code == 200, f"{context}: {response.text}"
    body = response.json()
    names = [tool["name"] for tool in body["data"]]
    assert body["count"] == len(names) and "search_logs" in names, f"{context}: {body}"
    assert all(tool["admitted"] and tool["origin"] == "builtin" for tool in body["data"]), context


@pytest.mark.parametrize("caller", [ANN, BOB, AUDREY, ADAM])
def test_every_role_reads_the_eval_history(keyed: Server, caller: str) -> None:
    # an evaluation holds no user's data: its questions come from a suite, its runs are its own
    history = send_as(keyed, EVALS, caller)
    one = send_as(keyed, GET_EVAL, caller)
    context = f"{EVALS} / {GET_EVAL} as {who(caller)}"
    assert (history.status_code, one.status_code) == (200, 200), f"{context}: {history.text}"
    assert [e["eval_id"] for e in history.json()["data"]] == [str(BEFORE_ID)], context
    assert one.json()["eval_id"] == str(BEFORE_ID) and len(one.json()["data"]) == 4, context
    assert question(ANN) not in history.text + one.text, f"{context}: a user's query leaked"


@pytest.mark.parametrize("caller", [ANN, BOB])
def test_the_log_is_not_for_users(keyed: Server, caller: str) -> None:
    response = send_as(keyed, AUDIT, caller)
    context = f"{AUDIT} as {who(caller)}"
    assert response.status_code == 403, f"{context}: {response.status_code} {response.text}"
    assert question(ANN) not in response.text and question(BOB) not in response.text, context


@pytest.mark.parametrize("caller", [AUDREY, ADAM])
def test_auditors_and_admins_page_through_the_whole_log(keyed: Server, caller: str) -> None:
    context = f"{AUDIT} as {who(caller)}"
    seen: list[dict[str, Any]] = []
    after = 0
    while True:
        response = send_as(keyed, AUDIT, caller, params={"after": str(after), "limit": "7"})
        assert response.status_code == 200, f"{context}: {response.text}"
        page = response.json()
        assert page["count"] == len(page["data"]) <= 7, context
        if not page["data"]:
            assert page["next_after"] == after, context
            break
        seen.extend(page["data"])
        after = page["next_after"]
        assert after == page["data"][-1]["position"], context
    expected = [r.to_json() for r in store_records(keyed.store)]
    assert [{**e, "stream": str(e["stream"])} for e in seen] == expected, context
    assert {e["type"] for e in seen} >= {"RUN_STARTED", "RUN_FINISHED"}, context
    assert all(e["hash"].startswith("sha256:") for e in seen), context


def test_an_admin_rebuilds_the_projections(keyed: Server) -> None:
    context = f"{REBUILD} as {who(ADAM)}"
    names = [p["name"] for p in send_as(keyed, PROJECTIONS, ADAM).json()["data"]]
    response = send_as(keyed, REBUILD, ADAM)
    assert response.status_code == 200, f"{context}: {response.text}"
    body = response.json()
    assert body["names"] == names, context
    assert body["entries"] == keyed.store.head() > 0, f"{context}: {body}"
    rebuilt = send_as(keyed, GET_RUN, ADAM, BOB).json()
    assert (rebuilt["run_id"], rebuilt["owner"]) == (keyed.runs[BOB].run_id, BOB), context


# -- without keys: the local principal -------------------------------------------------------------


@pytest.mark.parametrize("route", ROUTES, ids=str)
def test_without_keys_the_local_principal_may_do_everything(local: Server, route: Route) -> None:
    context = f"{route} without keys configured"
    if route in STARTS:
        run = start(local.client, route, None)
        url = GET_RUN.path.format(run_id=run.run_id)
        owner = send(local.client, GET_RUN, url, None, context).json()["owner"]
        assert owner == LOCAL, context
        return
    response = send_as(local, route, None, LOCAL)
    assert response.status_code == 200, f"{context}: {response.status_code} {response.text}"
    if route in OWNED:
        check_subject(route, response, local.runs[LOCAL], LOCAL)
    elif route == LIST:
        assert {r["owner"] for r in response.json()["data"]} == {LOCAL}, context
    elif route == REBUILD:
        assert response.json()["entries"] == local.store.head() > 0, context
    elif route == AUDIT:
        assert response.json()["count"] == local.store.head() > 0, context
    elif route in (EVALS, GET_EVAL):
        body = response.json()
        found = body["eval_id"] if route == GET_EVAL else body["data"][0]["eval_id"]
        assert found == str(BEFORE_ID), context


# -- with keys: a session's owner while the projections lag ----------------------------------------


@contextmanager
def projecting(settings: Settings, store: HarnessStore) -> Iterator[LiveProjections]:
    """What `harness projections run` does: follow the log into the read tables."""
    with bootstrap(settings, overrides=Overrides(store=store)) as services:
        live = services.live_projections(poll_interval=0.05).start()
        try:
            yield live
        finally:
            live.close()


def test_a_new_session_is_its_owners_even_before_the_projections_reach_it(tmp_path: Path) -> None:
    # The projections run in their own process (`harness projections run`, as with several
    # workers); here the test is that process, so it decides when they lag: not a timing race.
    settings = _settings(tmp_path, _keys()).model_copy(
        update={"projections_in_process": False, "read_wait": 0.0, "feed_poll": 0.05}
    )
    ann = {"query": question(ANN), "session_id": "shared-session"}
    bob = {**ann, "query": question(BOB)}
    with served_client(settings) as served:
        client, store = served.client, served.store
        with projecting(settings, store):  # it creates the read tables, then stops following
            pass
        first = send(client, CREATE, CREATE.path, bearer(KEYS[ANN]), "ann", ann)
        second = send(client, CREATE, CREATE.path, bearer(KEYS[BOB]), "bob into ann's", bob)
        started = [r.json()["stream"] for r in (first, second) if r.status_code == 202]
        with projecting(settings, store) as live:  # the projections catch up only now
            assert live.projector.wait_for(store.head(), 30), "the projections never caught up"
            for stream in started:  # every run ends before the server stops
                feed_of(send(client, STREAM, stream, bearer(KEYS[ADAM]), stream), stream)
            session = send(client, SESSION, "/v1/sessions/shared-session", bearer(KEYS[ANN]), "")
    assert first.status_code == 202, f"{CREATE} as ann: {first.text}"
    assert second.status_code == 404, f"{CREATE} as bob into ann's new session: {second.text}"
    assert {t["query"] for t in session.json()["data"]} == {question(ANN)}, session.text
