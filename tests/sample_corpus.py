"""The sample data as the built-in tools print it: the text an expected fact must come from."""

from __future__ import annotations

from importlib import resources
from typing import TYPE_CHECKING

from sqlalchemy import create_engine

from infrastructure.ops_data import SAMPLE_RESOURCE, load_sample, sample_services
from infrastructure.tools import builtin_tools

if TYPE_CHECKING:
    from pathlib import Path

DAYS = ("2026-11-28", "2026-11-29", "2026-11-30", "2026-12-01")
METRICS = ("latency_p99_ms", "error_rate", "cpu_pct", "memory_mb", "db_connections")


def sample_tool_lines(database: Path) -> list[str]:
    """Every sample record, one tool line each, read by the real tools from an SQLite file."""
    engine = create_engine(f"sqlite:///{database}")
    load_sample(engine)
    tools = {tool.name: tool for tool in builtin_tools(engine)}
    lines: list[str] = []
    for service in sample_services():
        for day, end in zip(DAYS, DAYS[1:], strict=False):
            window = {"service": service, "start": f"{day}T00:00:00Z", "end": f"{end}T00:00:00Z"}
            for name in ("search_logs", "list_deployments", "list_alerts"):
                output = tools[name].run({**window, "limit": 500})
                assert output.notes == (), f"{name} {window} was cut: {output.notes}"
                lines.extend(output.lines)
            for metric in METRICS:
                lines.extend(tools["query_metrics"].run({**window, "metric": metric}).lines)
    engine.dispose()
    return lines


def sample_file_text() -> str:
    """The sample file itself (its window, services and incidents)."""
    return resources.files("infrastructure").joinpath(SAMPLE_RESOURCE).read_text(encoding="utf-8")
