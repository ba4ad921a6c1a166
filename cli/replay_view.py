"""How ``harness audit replay`` shows a replay: the two decisions side by side, then the summary.

Statements are the model's text: each is shown on one line with every character a terminal acts
on spelled out (:mod:`cli.terminal_text`), and cut to :data:`SHOWN` characters.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from cli.terminal_text import spelled_out

if TYPE_CHECKING:
    from collections.abc import Sequence

    from application.whatif.decision import Decision
    from application.whatif.replay import Replayed

SHOWN = 60
"""The most characters of a statement shown beside its label."""


def one_line(text: str, limit: int = SHOWN) -> str:
    """``text`` on one line, nothing hidden in it, cut to ``limit`` characters."""
    flat = spelled_out(" ".join(text.split()))
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def side_by_side(replayed: Replayed, number: int) -> list[str]:
    """The lines that show one replay: what changed, each field twice, what differs."""
    changes = "; ".join(f"{k} {v}" for k, v in replayed.changes.items()) or "nothing changed"
    rows = [("", "recorded", "replay"), *_rows(replayed.original, replayed.replay)]
    first = max(len(r[0]) for r in rows)
    second = max(len(r[1]) for r in rows)
    lines = [f"run {replayed.run_id}: release replayed ({changes})"]
    lines += [f"  {a:<{first}}  {b:<{second}}  {c}".rstrip() for a, b, c in rows]
    lines += _statements(replayed.original, replayed.replay)
    if replayed.answered_by:
        said = "; ".join(f"{k}: {v}" for k, v in replayed.answered_by.items())
        lines.append(f"  replay's model calls answered by: {one_line(said, 200)}")
    found = len(replayed.differences)
    verdict = "the same decision" if not found else f"{found} difference{'s' * (found != 1)}"
    lines.append(f"{verdict}; recorded as replay {number} of this run (see `harness explain`)")
    return lines


def _rows(original: Decision, replay: Decision) -> list[tuple[str, str, str]]:
    def digest(d: Decision) -> str:
        return f"sha256 {d.content_sha256[:16]}" if d.content_sha256 else "nothing published"

    return [
        ("outcome", original.outcome, replay.outcome),
        ("fallback type", original.fallback_type or "-", replay.fallback_type or "-"),
        ("excerpt rules", original.rules, replay.rules),
        ("repair", one_line(original.repair, 90), one_line(replay.repair, 90)),
        ("judge", one_line(original.judge, 90), one_line(replay.judge, 90)),
        ("content", digest(original), digest(replay)),
    ]


def _statements(original: Decision, replay: Decision) -> list[str]:
    before = {f.label: f for f in original.statements}
    after = {f.label: f for f in replay.statements}
    lines = []
    for label in dict.fromkeys([*before, *after]):
        shown = before.get(label) or after[label]
        lines.append(f"  {label}: {one_line(shown.text)!s}")
        was = before[label].fate if label in before else "-"
        now = after[label].fate if label in after else "-"
        mark = "  " if was == now else "* "
        lines.append(f"    {mark}recorded: {one_line(was, 120)}")
        lines.append(f"    {mark}replay:   {one_line(now, 120)}")
    return lines


def summary(replays: Sequence[Replayed], refused: Sequence[tuple[str, str]]) -> list[str]:
    """The batch form's closing lines: how many outcomes would change, and how."""
    changed = Counter(
        f"{r.original.outcome} -> {r.replay.outcome}"
        for r in replays
        if (r.original.outcome, r.original.fallback_type)
        != (r.replay.outcome, r.replay.fallback_type)
    )
    other = sum(1 for r in replays if r.differences) - sum(changed.values())
    count = len(replays)
    lines = [
        f"{count} run{'s' * (count != 1)} replayed: {sum(changed.values())} outcome(s) would"
        f" change, {other} other decision(s) differ in a statement or the content"
    ]
    lines += [f"  {how}: {n}" for how, n in sorted(changed.items())]
    if refused:
        lines.append(f"{len(refused)} run(s) not replayed:")
        lines += [f"  {run_id}: {why}" for run_id, why in refused]
    return lines


def brief(replayed: Replayed) -> str:
    """One line for one run of the batch form."""
    before, after = replayed.original, replayed.replay
    was = before.outcome + (f" ({before.fallback_type})" if before.fallback_type else "")
    now = after.outcome + (f" ({after.fallback_type})" if after.fallback_type else "")
    if not replayed.differences:
        return f"{replayed.run_id}  {was}: the same"
    return f"{replayed.run_id}  {was} -> {now}: {len(replayed.differences)} difference(s)"


def as_json(replayed: Replayed, number: int) -> dict[str, Any]:
    """The replay as ``--json`` prints it."""
    return {
        "run_id": str(replayed.run_id),
        "replay": number,
        "changes": replayed.changes,
        "differences": list(replayed.differences),
        "answered_by": replayed.answered_by,
        "original": replayed.original.to_json(),
        "replayed": replayed.replay.to_json(),
    }
