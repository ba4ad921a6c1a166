"""Tool admission as data: one answer per tool, read by the summary, the model request, preflight.

Also the stderr log's bound: a server that writes without end fills at most two files.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest

from application.ports import JSON, ToolOutput
from application.tool_admission import Admission, AdmittedBy, Refusal, admission_of, admitted
from infrastructure.mcp_stderr import StderrLog
from infrastructure.mcp_tools import annotation_admission
from infrastructure.tool_catalog import summary_lines, view_of

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"service": {"type": "string"}}}
SETTING = "[servers.s.tools.t] of HARNESS_TOOLS_CONFIG"


@dataclass
class Plain:
    """A tool by the ``Tool`` port, as a plugin or a test gives one."""

    name: str = "uptime"
    read_only: bool = True
    description: str = "uptime"
    parameters: JSON = field(default_factory=lambda: dict(SCHEMA))
    required_scope: str = "ops:read"
    max_result_bytes: int = 1000
    blocking: bool = False
    origin: str = "plugin:up"

    def normalize_scope(self, arguments: JSON) -> str:
        return ""

    def run(self, arguments: JSON) -> ToolOutput:
        return ToolOutput(("up",), "")


@pytest.mark.parametrize(
    ("annotations", "refusal", "why"),
    [
        (None, Refusal.NOT_ANNOTATED, "the server gives no readOnlyHint"),
        (types.ToolAnnotations(), Refusal.NOT_ANNOTATED, "the server gives no readOnlyHint"),
        (
            types.ToolAnnotations(read_only_hint=False),
            Refusal.READ_ONLY_HINT_FALSE,
            "the server says readOnlyHint: false",
        ),
        (
            types.ToolAnnotations(read_only_hint=False, destructive_hint=True),
            Refusal.READ_ONLY_HINT_FALSE,
            "the server says readOnlyHint: false, destructiveHint: true",
        ),
        (
            types.ToolAnnotations(read_only_hint=True, destructive_hint=True),
            Refusal.DESTRUCTIVE,
            "the server says destructiveHint: true",
        ),
        (types.ToolAnnotations(read_only_hint=True, destructive_hint=False), None, ""),
    ],
)
def test_the_annotations_decide_and_allow_not_read_only_admits_what_they_refuse(
    annotations: types.ToolAnnotations | None, refusal: Refusal | None, why: str
) -> None:
    spec = types.Tool(name="t", input_schema=SCHEMA, annotations=annotations)
    found = annotation_admission(spec, setting=SETTING)
    assert (found.refusal, found.why, found.admitted) == (refusal, why, refusal is None)
    allowed = annotation_admission(spec, allow_not_read_only=True, setting=SETTING)
    assert allowed.admitted
    expected = AdmittedBy.READ_ONLY if refusal is None else AdmittedBy.ALLOW_NOT_READ_ONLY
    assert allowed.by is expected
    if refusal is not None:
        assert found.rejection("t") == (
            f"t is not read-only ({why}); to admit it anyway set allow_not_read_only = true in"
            f" {SETTING}"
        )


def test_a_tool_the_server_stops_listing_is_refused_whatever_the_configuration() -> None:
    found = annotation_admission(None, allow_not_read_only=True, setting=SETTING)
    assert (found.refusal, found.rejection("t")) == (
        Refusal.NOT_LISTED,
        "t is refused (the server no longer lists it)",
    )


def test_names_clashes_and_a_tools_own_word() -> None:
    assert admission_of(Plain()).by is AdmittedBy.READ_ONLY
    writes = admission_of(Plain(read_only=False))
    assert (writes.refusal, writes.remedy) == (Refusal.NOT_READ_ONLY, "")
    assert admission_of(Plain(name="ops.uptime")).refusal is Refusal.INVALID_NAME
    assert admission_of(Plain(name="x" * 65)).refusal is Refusal.INVALID_NAME
    clash = admission_of(Plain(origin="mcp:b"), clash="builtin")
    assert (clash.refusal, clash.why, clash.remedy) == (
        Refusal.NAME_CLASH,
        "builtin already offers uptime",
        "give mcp:b a prefix",
    )
    assert [tool.name for tool in admitted([Plain("a"), Plain("b", False), Plain("c")])] == [
        "a",
        "c",
    ]


def test_a_tool_cannot_admit_itself_against_its_read_only() -> None:
    tool = Plain(read_only=False)
    tool.admission = Admission(AdmittedBy.READ_ONLY)  # type: ignore[attr-defined]
    assert admission_of(tool).refusal is Refusal.NOT_READ_ONLY


def test_the_summary_is_one_line_per_source_in_order(tmp_path: Path) -> None:
    views = [
        view_of(Plain("a"), "builtin"),
        view_of(Plain("b", read_only=False), "plugin:up"),
        view_of(Plain("a"), "plugin:up", clash="builtin"),
        view_of(Plain("c"), "builtin"),
    ]
    log = tmp_path / "mcp-x.log"
    assert summary_lines(views, {"plugin:up": log}) == [
        "tools from builtin: 2 admitted, 0 refused",
        f"tools from plugin:up: 0 admitted, 2 refused (b: not read-only; a: name clash);"
        f" its stderr goes to {log}",
    ]


def test_a_server_writing_without_end_fills_at_most_two_bounded_files(tmp_path: Path) -> None:
    log = StderrLog(tmp_path / "logs" / "mcp-loud.log", max_bytes=10_000)
    script = "import sys\nfor i in range(5000): print(f'warning {i}', file=sys.stderr)\n"
    subprocess.run([sys.executable, "-c", script], stderr=log.writer, check=True, timeout=60)
    log.close()
    files = sorted((tmp_path / "logs").iterdir())
    assert [path.name for path in files] == ["mcp-loud.log", "mcp-loud.log.1"]
    assert all(path.stat().st_size <= 10_000 for path in files)
    assert files[0].read_text().splitlines()[-1] == "warning 4999"
