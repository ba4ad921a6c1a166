"""What ``harness mcp serve`` reads: ``list_runs``, ``explain_run`` and runs as resources.

Each read is the API's, under the same rule: a user sees only their own runs (another's is a
run that does not exist), an auditor or admin sees all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from uuid import UUID

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from api.errors import NotFound, NotShownYet
from api.mcp_answers import error, explanation_result, problems, runs_result
from api.params import SessionId
from api.schemas import RunPublic
from application.explain import explain_run
from domain.release_states import ReleaseOutcome
from domain.states import DbStatus, Intent, RunState
from projections.run_listing import RunFilter, RunKey, RunsPage, list_runs

if TYPE_CHECKING:
    from api.auth import Principal
    from api.deps import Worker

RUN_URI = "harness://runs/{run_id}"
READ_TOOLS = ("list_runs", "explain_run")
RESOURCE_PAGE = 50
RESOURCE_NOT_FOUND = -32002
"""The MCP specification's error code for a resource that does not exist."""
READ_ONLY = types.ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)


class ListRunsArguments(BaseModel):
    """``list_runs``'s arguments: the filters of ``GET /v1/runs``, newest first."""

    model_config = ConfigDict(extra="forbid")

    session_id: SessionId | None = Field(None, description="Only this session's runs.")
    intent: Intent | None = Field(None, description="What the router decided.")
    state: RunState | None = Field(None, description="How it ended (RUNNING: not yet).")
    release_outcome: ReleaseOutcome | None = None
    limit: int = Field(20, ge=1, le=100, description="How many, newest first.")
    cursor: str | None = Field(None, description="A next_cursor this tool returned.")


class ExplainArguments(BaseModel):
    """``explain_run``'s argument."""

    model_config = ConfigDict(extra="forbid")

    run_id: UUID = Field(description="A run id (ask, diagnose or list_runs gave it).")


class ReadTools:
    """The read-only tools and the resources of one worker."""

    def __init__(self, worker: Worker) -> None:
        """Read through ``worker``'s store and read tables."""
        self.worker = worker

    def tools(self) -> list[types.Tool]:
        """``list_runs`` and ``explain_run``."""
        return [
            types.Tool(
                name="list_runs",
                description="List the harness's runs, newest first: id, status, outcome, intent "
                "and question, narrowed by session, intent, state or outcome.",
                input_schema=ListRunsArguments.model_json_schema(),
                annotations=READ_ONLY,
            ),
            types.Tool(
                name="explain_run",
                description="Why a run ended as it did: every troubleshooting question (route, "
                "tools, evidence, guards, budget, deadline) answered from its event log.",
                input_schema=ExplainArguments.model_json_schema(),
                annotations=READ_ONLY,
            ),
        ]

    async def call(
        self, name: str, who: Principal, arguments: dict[str, Any]
    ) -> types.CallToolResult:
        """Run the read tool ``name`` for ``who``; a tool error names what was wrong."""
        try:
            if name == "list_runs":
                listing = ListRunsArguments.model_validate(arguments)
                return await anyio.to_thread.run_sync(self._list, who, listing)
            if name == "explain_run":
                run_id = ExplainArguments.model_validate(arguments).run_id
                return await anyio.to_thread.run_sync(self._explain, who, run_id)
        except ValidationError as invalid:
            return error(f"invalid arguments: {problems(invalid)}")
        except (NotFound, ValueError) as refused:
            return error(str(refused))
        raise ValueError(f"{name!r} is not a read tool")  # the server offers only READ_TOOLS

    def _list(self, who: Principal, listing: ListRunsArguments) -> types.CallToolResult:
        start = RunKey.from_cursor(listing.cursor) if listing.cursor else None
        running = listing.state is RunState.RUNNING
        where = RunFilter(
            owner=None if who.reads_all else who.name,
            session_id=listing.session_id,
            intent=listing.intent.value if listing.intent else None,
            status=DbStatus.RUNNING.value if running else None,
            termination_state=None if running or not listing.state else listing.state.value,
            release_outcome=listing.release_outcome.value if listing.release_outcome else None,
        )
        self.worker.fresh("diagnosis_run")
        with self.worker.engine.connect() as connection:
            page = list_runs(connection, where, listing.limit, start=start)
        rows = [RunPublic.model_validate(r).model_dump(mode="json") for r in page.rows]
        return runs_result(rows, page.next.cursor() if page.next else None)

    def _explain(self, who: Principal, run_id: UUID) -> types.CallToolResult:
        self.worker.owned_run(run_id, who)
        return explanation_result(explain_run(self.worker.store, run_id))

    @staticmethod
    def template() -> types.ResourceTemplate:
        """Every run, as ``harness://runs/{run_id}``."""
        return types.ResourceTemplate(
            uri_template=RUN_URI,
            name="run",
            description="A run as GET /v1/runs/{run_id} gives it: status, outcome, "
            "termination, usage and the published result.",
            mime_type="application/json",
        )

    async def resources(self, who: Principal, cursor: str | None) -> types.ListResourcesResult:
        """The newest runs ``who`` may see, a page at a time."""
        try:
            start = RunKey.from_cursor(cursor) if cursor else None
        except ValueError as invalid:
            raise MCPError(types.INVALID_PARAMS, f"{invalid}: pass a nextCursor") from None
        page = await anyio.to_thread.run_sync(self._page, who, start)
        listed = [
            types.Resource(
                uri=RUN_URI.format(run_id=row["run_id"]),
                name=str(row["run_id"]),
                title=str(row["query"])[:80],
                description=f"{row['status']}, {row.get('release_outcome') or 'not finished'}",
                mime_type="application/json",
            )
            for row in page.rows
        ]
        following = page.next.cursor() if page.next else None
        return types.ListResourcesResult(resources=listed, next_cursor=following)

    def _page(self, who: Principal, start: RunKey | None) -> RunsPage:
        where = RunFilter(owner=None if who.reads_all else who.name)
        self.worker.fresh("diagnosis_run")  # as list_runs: a run just asked is listed
        with self.worker.engine.connect() as connection:
            return list_runs(connection, where, RESOURCE_PAGE, start=start)

    async def read(self, who: Principal, uri: str) -> types.ReadResourceResult:
        """One run's row and published content, if ``who`` may see it."""
        prefix = RUN_URI.removesuffix("{run_id}")
        try:
            run_id = UUID(uri.removeprefix(prefix)) if uri.startswith(prefix) else None
        except ValueError:
            run_id = None
        if run_id is None:
            raise MCPError(RESOURCE_NOT_FOUND, f"no resource {uri!r:.120}; runs are {RUN_URI}")
        try:
            text = await anyio.to_thread.run_sync(self._run_json, who, run_id)
        except (NotFound, NotShownYet) as missing:
            raise MCPError(RESOURCE_NOT_FOUND, str(missing)) from None
        contents = types.TextResourceContents(uri=uri, mime_type="application/json", text=text)
        return types.ReadResourceResult(contents=[contents])

    def _run_json(self, who: Principal, run_id: UUID) -> str:
        row = self.worker.visible_run(run_id, who)
        return RunPublic.model_validate(row).model_dump_json()
