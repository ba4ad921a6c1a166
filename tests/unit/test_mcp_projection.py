"""MCP results become bounded evidence lines; arguments are checked against the inputSchema."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import mcp_types as types
import pytest
from hypothesis import given
from hypothesis import strategies as st

from application.ports import ToolArgumentsError
from application.tool_admission import Refusal
from infrastructure.mcp_client import McpConnection
from infrastructure.mcp_results import MAX_SCOPE_CHARS, canonical_scope, project
from infrastructure.mcp_tools import McpTool, annotation_admission
from infrastructure.tool_config import StdioServer, ToolOptions, ToolsConfigError, load_tools_config

SCHEMA = {
    "type": "object",
    "properties": {"service": {"type": "string"}, "limit": {"type": "integer", "minimum": 1}},
    "required": ["service"],
    "additionalProperties": False,
}


def _tool(annotations: types.ToolAnnotations | None = None, **options: object) -> McpTool:
    server = StdioServer(transport="stdio", command="unused")
    spec = types.Tool(name="logs", input_schema=SCHEMA, annotations=annotations)
    connection = McpConnection("ops", server)
    connection.tools = {"logs": spec}  # as its listing said (the tool reads the latest one)
    return McpTool(connection, spec, ToolOptions.model_validate(options))


def test_text_lines_are_kept_and_structured_content_only_without_text() -> None:
    text = types.CallToolResult(
        content=[types.TextContent(text="a\nb")], structured_content={"x": 1}
    )
    assert project(text, 8000) == (("a", "b"), ())
    structured = types.CallToolResult(content=[], structured_content={"b": [1, 2], "a": "é"})
    assert project(structured, 8000) == (('{"a":"é","b":[1,2]}',), ())


def test_images_audio_and_resources_are_described_in_notes_never_inlined() -> None:
    data = base64.b64encode(b"\x89PNG" * 1000).decode()
    result = types.CallToolResult(
        content=[
            types.ImageContent(data=data, mime_type="image/png"),
            types.AudioContent(data=data, mime_type="audio/wav"),
            types.EmbeddedResource(
                resource=types.TextResourceContents(uri="file:///x.log", text="secret" * 100)
            ),
            types.ResourceLink(uri="file:///y.log", name="y", mime_type="text/plain"),
        ]
    )
    lines, notes = project(result, 8000)
    assert lines == ()  # the harness's descriptions are no records: nothing here can be quoted
    assert notes == (
        "[image image/png, about 4000 bytes, not shown]",
        "[audio audio/wav, about 4000 bytes, not shown]",
        "[resource file:///x.log (unknown type), 600 characters, not shown]",
        "[resource link file:///y.log (text/plain)]",
    )
    assert data not in "".join(notes) and "secret" not in "".join(notes)


@given(st.lists(st.text(max_size=300), max_size=200), st.integers(64, 4000))
def test_evidence_never_exceeds_its_limit_by_more_than_one_note(
    texts: list[str], limit: int
) -> None:
    result = types.CallToolResult(content=[types.TextContent(text=t) for t in texts])
    lines, notes = project(result, limit)
    assert sum(len(line.encode("utf-8", "surrogatepass")) + 1 for line in lines) <= max(limit, 64)
    assert len(notes) <= 2  # a first record cut short, and how much more was not shown
    written = [line for text in texts for line in text.splitlines()]
    assert all(line in written for line in lines[1:])  # only the first may be cut, and only
    assert not lines or any(w.startswith(lines[0]) for w in written)  # to its start


def test_one_huge_line_keeps_its_whole_tokens_and_says_it_was_cut() -> None:
    # 500 bytes less room for the note end inside "0.97": a cut "0.9" is never kept
    text = "w " * 219 + "error_rate=0.97" + " more" * 1000
    ((line,), notes) = project(types.CallToolResult(content=[types.TextContent(text=text)]), 500)
    assert line == "w " * 219 + "error_rate="  # "=" ends a token; "0.9" would cut one
    assert notes == (f"[the first record was cut to {len(line)} of {len(text)} bytes]",)


def test_one_huge_token_keeps_nothing_that_could_be_quoted() -> None:
    lines, notes = project(types.CallToolResult(content=[types.TextContent(text="x" * 10**6)]), 500)
    assert lines == ()
    assert notes == ("[the first record was cut to 0 of 1000000 bytes]",)


def says_read_only(spec: types.Tool | None) -> bool:
    """True only for ``readOnlyHint: true`` without ``destructiveHint: true``."""
    return annotation_admission(spec).admitted


@pytest.mark.parametrize(
    ("annotations", "read_only"),
    [
        (None, False),
        (types.ToolAnnotations(), False),
        (types.ToolAnnotations(read_only_hint=False), False),
        (types.ToolAnnotations(read_only_hint=True, destructive_hint=True), False),
        (types.ToolAnnotations(read_only_hint=True), True),
        (types.ToolAnnotations(read_only_hint=True, destructive_hint=False), True),
    ],
)
def test_only_an_uncontradicted_read_only_hint_is_read_only(
    annotations: types.ToolAnnotations | None, read_only: bool
) -> None:
    spec = types.Tool(name="t", input_schema=SCHEMA, annotations=annotations)
    assert says_read_only(spec) is read_only


def test_arguments_are_checked_against_the_schema_naming_the_field() -> None:
    tool = _tool()
    with pytest.raises(ToolArgumentsError, match=r"^limit: 0 is less than the minimum of 1"):
        tool.normalize_scope({"service": "checkout", "limit": 0})
    with pytest.raises(ToolArgumentsError, match="'service' is a required property"):
        tool.normalize_scope({})
    scope = tool.normalize_scope({"limit": 2, "service": "checkout"})
    assert scope == '{"limit":2,"service":"checkout"}'


def test_a_long_scope_is_bounded_and_still_tells_calls_apart() -> None:
    one, two = canonical_scope({"q": "a" * 5000}), canonical_scope({"q": "a" * 4999 + "b"})
    assert len(one) <= MAX_SCOPE_CHARS and len(two) <= MAX_SCOPE_CHARS and one != two
    assert json.loads(canonical_scope({"b": 1, "a": [1]})) == {"a": [1], "b": 1}


def test_an_override_is_reported_only_when_it_made_the_difference() -> None:
    refused = _tool(types.ToolAnnotations(read_only_hint=False))
    assert (refused.read_only, refused.read_only_override) == (False, False)
    overridden = _tool(types.ToolAnnotations(read_only_hint=False), allow_not_read_only=True)
    assert (overridden.read_only, overridden.read_only_override) == (True, True)
    honest = _tool(types.ToolAnnotations(read_only_hint=True), allow_not_read_only=True)
    assert (honest.read_only, honest.read_only_override) == (True, False)


def test_a_tool_whose_schema_is_not_a_schema_is_refused() -> None:
    server = StdioServer(transport="stdio", command="unused")
    spec = types.Tool(name="bad", input_schema={"type": "object", "properties": {"x": {"type": 5}}})
    connection = McpConnection("ops", server)
    connection.tools = {"bad": spec}  # as the server listed it
    tool = McpTool(connection, spec, ToolOptions())
    assert tool.admission.refusal is Refusal.SCHEMA and not tool.read_only
    assert "inputSchema" in tool.admission.why and tool.parameters == {}


def test_yaml_reads_like_toml_and_errors_name_the_file_and_field(tmp_path: Path) -> None:
    path = tmp_path / "tools.yaml"
    path.write_text(
        "builtin: [search_logs]\nservers:\n  ops: {transport: http, url: 'http://h/mcp'}\n"
    )
    config = load_tools_config(path)
    assert config.builtin == ["search_logs"] and config.servers["ops"].transport == "http"
    path.write_text("servers:\n  ops: {transport: http, url: 'ftp://h', headers: {A: b}}\n")
    with pytest.raises(ToolsConfigError) as raised:
        load_tools_config(path)
    message = str(raised.value)
    assert message.startswith(f"{path}: ") and "servers.ops.url" in message
    assert "servers.ops.headers: unknown field" in message and "\n" not in message
    path.write_text("servers:\n  http: {transport: http, url: 'ftp://h'}\n")
    with pytest.raises(ToolsConfigError, match=r"servers\.http\.url: String should match"):
        load_tools_config(path)  # a server may be called like a transport
    (tmp_path / "tools.json").write_text("{}")
    with pytest.raises(ToolsConfigError, match="name a .toml, .yaml or .yml file"):
        load_tools_config(tmp_path / "tools.json")
    with pytest.raises(ToolsConfigError, match="cannot read it"):
        load_tools_config(tmp_path / "absent.toml")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("builtin = 3", 'builtin: must be "all", "none" or a list of built-in tool names'),
        ('builtin = "al"', 'builtin: must be "all", "none" or a list of built-in tool names'),
        ('builtin = ["search_logs", 3]', "builtin.1: Input should be a valid string"),
    ],
)
def test_a_malformed_builtin_entry_is_named_once_without_pydantic_union_tags(
    tmp_path: Path, text: str, expected: str
) -> None:
    path = tmp_path / "tools.toml"
    path.write_text(text + "\n")
    with pytest.raises(ToolsConfigError) as raised:
        load_tools_config(path)
    assert str(raised.value) == f"{path}: {expected}"
