"""``harness audit replay``: would today's guards (or another judge) have published this?"""

from __future__ import annotations

import json
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated
from uuid import UUID

import typer

from cli.common import fail, opened, out_console
from cli.reads import bring_up_to_date, lookup_run_id
from cli.replay_view import as_json, brief, one_line, side_by_side, summary

if TYPE_CHECKING:
    from collections.abc import Iterator

    from application.whatif.replay import ReplayOptions
    from bootstrap.composition import Services
    from infrastructure.settings import Settings

REPLAY_HELP = "\n\n".join(
    (
        "Run a finished diagnosis's release again over what it recorded, and show both decisions.",
        "No tool is called again: the release pipeline runs over the run's recorded draft,"
        " progress and tool results, with the repair and the judge answered from the recording"
        " unless --judge-model asks a judge again. Change the excerpt rules with --rules current"
        " (the configured HARNESS_EXCERPT_MIN_*), --excerpt-min-words or --excerpt-min-chars."
        " Each replay is recorded in a stream of its own that names the run (the run's events"
        " are never changed) and shows in `harness explain`.",
        "Examples: `harness audit replay RUN_ID --excerpt-min-words 6`;"
        " `harness audit replay RUN_ID --judge-model openai`;"
        " `harness audit replay --since 2026-11-01 --until 2026-12-01 --rules current`.",
    )
)
BATCH_LIMIT = 10_000
"""The most runs one batch replays (narrow the range for more)."""


def replay(
    run_id: Annotated[str | None, typer.Argument(help="The run (or a unique prefix).")] = None,
    since: Annotated[
        str | None, typer.Option(help="Replay every finished diagnosis created from then on.")
    ] = None,
    until: Annotated[str | None, typer.Option(help="... and before then (default: now).")] = None,
    rules: Annotated[
        str, typer.Option(help="Excerpt rules: recorded (the run's) or current (configured).")
    ] = "recorded",
    excerpt_min_words: Annotated[
        int | None, typer.Option(min=0, max=1000, help="Words an excerpt needs.")
    ] = None,
    excerpt_min_chars: Annotated[
        int | None, typer.Option(min=0, max=100_000, help="Characters an excerpt needs.")
    ] = None,
    judge_model: Annotated[
        str | None,
        typer.Option(
            help="Ask this judge again: offline, scripted:PATH or openai (HARNESS_OPENAI_*)."
        ),
    ] = None,
    as_json_: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Run a finished diagnosis's release again over what it recorded."""
    if (run_id is None) == (since is None):
        fail("give a RUN_ID or --since (not both): `harness audit replay RUN_ID`")
    if until is not None and since is None:
        fail("--until needs --since")
    if rules not in ("recorded", "current"):
        fail(f"--rules must be recorded or current, not {rules[:40]!r}")
    window = (_instant("--since", since), _instant("--until", until)) if since else None
    excerpts = (excerpt_min_words, excerpt_min_chars)
    with opened() as services, _options(services.settings, rules, excerpts, judge_model) as options:
        if window is None:
            assert run_id is not None
            _one(services, lookup_run_id(services, run_id), options, as_json_)
        else:
            _batch(services, window, options, as_json_)


def _instant(name: str, text: str | None) -> datetime:
    if text is None:
        return datetime.now(UTC)
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        fail(f"{name} {text[:40]!r} is not an ISO 8601 date or time (2026-11-01T09:00Z)")
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


@contextmanager
def _options(
    settings: Settings, rules: str, excerpts: tuple[int | None, int | None], judge: str | None
) -> Iterator[ReplayOptions]:
    """The replay's options, with the judge it asks (closed afterwards)."""
    from application.whatif.replay import ReplayOptions
    from domain.grounding import GroundingRules
    from infrastructure.model_config import check_model
    from infrastructure.model_provider import configured_provider

    current = GroundingRules(settings.excerpt_min_words, settings.excerpt_min_chars)
    chosen = ReplayOptions(
        rules=current if rules == "current" else None,
        min_words=excerpts[0],
        min_chars=excerpts[1],
        timeout_s=settings.model_timeout,
    )
    if judge is None:
        yield chosen
        return
    try:
        check_model(judge)
        provider, close = configured_provider(settings.model_copy(update={"model": judge}))
    except ValueError as error:
        fail(f"--judge-model: {' '.join(str(error).split())[:300]}")
    try:
        yield replace(chosen, judge=provider, judge_label=judge)
    finally:
        if close is not None:
            close()


def _one(services: Services, run_id: UUID, options: ReplayOptions, as_json_: bool) -> None:
    from application.whatif.records import record_replay
    from application.whatif.replay import ReplayError, replay_release

    try:
        replayed = replay_release(services.store, run_id, options)
    except ReplayError as error:
        fail(str(error))
    number = record_replay(services.store, replayed, datetime.now(UTC))
    said = out_console()
    if as_json_:
        said.print_json(json.dumps(as_json(replayed, number)))
        return
    for line in side_by_side(replayed, number):
        said.print(line, markup=False, highlight=False)


def _batch(
    services: Services,
    window: tuple[datetime, datetime],
    options: ReplayOptions,
    as_json_: bool,
) -> None:
    from application.whatif.records import record_replay
    from application.whatif.replay import Replayed, ReplayError, replay_release
    from projections.queries import diagnoses_between

    bring_up_to_date(services)
    with services.engine.connect() as connection:
        run_ids = diagnoses_between(connection, *window, BATCH_LIMIT + 1)
    if len(run_ids) > BATCH_LIMIT:
        fail(f"more than {BATCH_LIMIT} runs in that range: narrow --since/--until")
    done: list[tuple[Replayed, int]] = []
    refused: list[tuple[str, str]] = []
    for run_id in run_ids:
        try:
            replayed = replay_release(services.store, UUID(run_id), options)
        except ReplayError as error:
            refused.append((run_id, str(error)))
            continue
        except Exception as error:  # noqa: BLE001 - one run's failure is said; the batch goes on
            refused.append((run_id, f"unexpected {type(error).__name__}: {one_line(str(error))}"))
            continue
        done.append((replayed, record_replay(services.store, replayed, datetime.now(UTC))))
    said = out_console()
    if as_json_:
        data = {"replays": [as_json(r, n) for r, n in done], "not_replayed": dict(refused)}
        said.print_json(json.dumps(data))
        return
    lines = [brief(r) for r, _ in done] + summary([r for r, _ in done], refused)
    for line in lines:
        said.print(line, markup=False, highlight=False)
