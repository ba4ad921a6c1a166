"""``harness tools list``: every configured tool, its origin, annotations, admission and arguments.

It starts the configured MCP servers to list their tools, as ``harness serve`` does, and stops
them again; a tools configuration that cannot be used is one line and exit 2.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from cli.common import fail, load_settings, opened, out_console
from cli.terminal_text import spelled_out

if TYPE_CHECKING:
    from infrastructure.tool_catalog import ToolView

COLUMNS = ("tool", "origin", "admission", "reason", "to admit it", "annotations", "arguments")

tools_app = typer.Typer(help="The tools runs may use, and those refused.", no_args_is_help=True)


@tools_app.command("list")
def list_tools(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """Show every tool: origin, annotations, admitted or refused (and why), and its arguments.

    Only admitted tools are offered to the model; a refused one names the setting that would
    admit it, when one would. --json prints what GET /v1/tools answers.
    """
    from api.schemas_ops import ToolPublic, ToolsPublic
    from infrastructure.settings import ConfigurationError
    from infrastructure.tool_sources import tool_views

    settings = load_settings()
    with opened(settings, create=settings.database.kind == "sqlite") as services:
        try:
            views = tool_views(services.tools(announce=False), services.sources)
        except ConfigurationError as error:
            fail(f"invalid tools configuration: {error}")
    if as_json:
        data = [ToolPublic.of(view) for view in views]
        typer.echo(ToolsPublic(data=data, count=len(data)).model_dump_json(indent=2))
        return
    out_console().print(tools_table(views))


def tools_table(views: list[ToolView]) -> Table:
    """One line per tool; cells are ``Text``, never markup (a server chooses the words)."""
    table = Table(*COLUMNS)
    for view in views:
        admission = view.admission
        cells = (
            view.name,
            view.origin,
            admission.words(),
            admission.why,
            admission.remedy,
            ", ".join(f"{k}: {json.dumps(v)}" for k, v in view.annotations.items()),
            ", ".join(_arguments(view.input_schema)),
        )
        table.add_row(*(Text(spelled_out(cell)) for cell in cells))
    return table


def _arguments(schema: Any) -> list[str]:
    """The argument names of a JSON schema, a required one marked ``*``."""
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict):
        return []
    required = schema.get("required") or []
    return [f"{name}*" if name in required else str(name) for name in properties]
