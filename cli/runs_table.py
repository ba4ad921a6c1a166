"""The tables ``harness runs`` prints: whole values in pipes, short ids and queries on a terminal.

Cells are ``Text``, never markup, so a query such as ``why [bold] fails`` prints as typed.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from rich.table import Table
from rich.text import Text

from cli.reads import short_ids
from cli.terminal_text import spelled_out

if TYPE_CHECKING:
    from sqlalchemy import Connection

    from application.recovery import SweepReport
    from projections.queries import Row

QUERY_WIDTH = 48
"""The widest a query column gets on a terminal (the rest is an ellipsis; pipes get it all)."""
_SPACE = re.compile(r"\s+")
_WHOLE = ("created", "status", "outcome", "termination")
"""Columns kept on one line on a terminal (the others give way first)."""
_HIDDEN = ("safe_answer", "published_result", "release_content")


def _text(value: Any) -> Text:
    return Text("" if value is None else spelled_out(str(value)))


def runs_table(connection: Connection, rows: list[Row], terminal: bool) -> Table:
    """One line per run; on a terminal with short ids and the query cut to fit."""
    ids = [str(row["run_id"]) for row in rows]
    shown = short_ids(connection, ids) if terminal else {run_id: run_id for run_id in ids}
    table = Table()
    table.add_column("run", no_wrap=True)
    if terminal:
        table.add_column("query", no_wrap=True, overflow="ellipsis", max_width=QUERY_WIDTH)
    else:
        table.add_column("query")
    for name in ("session", "created", "status", "outcome", "fallback", "termination", "reason"):
        table.add_column(name, no_wrap=name in _WHOLE, overflow="ellipsis" if terminal else "fold")
    for row in rows:
        table.add_row(
            Text(shown[str(row["run_id"])]),
            # one line per run, even in pipes
            Text(spelled_out(_SPACE.sub(" ", str(row["query"])).strip())),
            _text(row["session_id"]),
            Text(f"{row['created_at']:%Y-%m-%d %H:%M:%S}"),
            _text(row["status"]),
            _text(row["release_outcome"]),
            _text(row["fallback_type"]),
            _text(row["termination_state"]),
            _text(row["termination_reason"]),
        )
    return table


def run_tables(row: Row, trace: list[Row]) -> tuple[Table, Table]:
    """A run's fields, then its timeline."""
    summary = Table("field", "value", show_header=False)
    for name, value in row.items():
        if name not in _HIDDEN:
            summary.add_row(Text(name), _text(value))
    timeline = Table("position", "event", "phase", "status")
    for event in trace:
        timeline.add_row(
            Text(str(event["position"])),
            _text(event["event_type"]),
            _text(event["phase"]),
            _text(event["status"]),
        )
    return summary, timeline


def recovered_json(report: SweepReport) -> dict[str, Any]:
    """The sweep's report as ``runs recover --json`` prints it."""
    return {
        "ended": [
            {
                "run_id": r.run_id,
                "worker": r.worker,
                "worker_was": r.liveness.value,
                "termination_state": r.termination.state.value,
                "termination_reason": r.termination.reason.value,
                "position": r.position,
            }
            for r in report.ended
        ],
        "live": report.live,
        "waiting": report.waiting,
    }


def recovered_table(report: SweepReport) -> Table:
    """The runs a sweep ended, one line each."""
    table = Table("run", "worker", "worker was", "ended", "reason", "position")
    for r in report.ended:
        table.add_row(
            str(r.run_id),
            r.worker or "(none recorded)",
            r.liveness.value,
            r.termination.state.value,
            r.termination.reason.value,
            str(r.position),
        )
    return table
