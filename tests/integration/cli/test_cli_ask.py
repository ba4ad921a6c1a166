"""``harness ask`` says what the user got first; a scripted scenario plays fully in every run."""

from __future__ import annotations

from pathlib import Path

import yaml

from bootstrap.composition import bootstrap
from domain.release_states import ReleaseOutcome
from infrastructure.settings import Settings
from tests.integration._cli import harness, store_env

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def test_a_fallback_reads_as_a_fallback_before_the_run_state(
    sqlite_settings: Settings, tmp_path: Path
) -> None:
    env = store_env(sqlite_settings) | {
        "HARNESS_MODEL": f"scripted:{SCENARIOS / 'limited_checks.yaml'}"
    }
    asked = harness("ask", "why is payments slow?", env=env, cwd=tmp_path)
    assert asked.returncode == 0, asked.stderr
    lines = asked.stdout.splitlines()
    assert "run ended: state SUCCESS (COMPLETED)" in lines
    assert not any(line.startswith("run SUCCESS") for line in lines)
    banner = lines.index("== FALLBACK — INSUFFICIENT_EVIDENCE ==")
    assert lines[banner + 1].startswith("Result: FALLBACK (INSUFFICIENT_EVIDENCE)")
    assert "the run itself ended normally (state SUCCESS, COMPLETED)" in lines[banner + 1]
    assert all(len(line) < 1000 for line in lines)  # no rule as wide as the pipe


def test_a_failed_run_says_nothing_was_published(sqlite_settings: Settings, tmp_path: Path) -> None:
    env = store_env(sqlite_settings) | {
        "HARNESS_MODEL": f"scripted:{SCENARIOS / 'internal_failure.yaml'}"
    }
    asked = harness("ask", "why is payments slow?", env=env, cwd=tmp_path)
    assert asked.returncode == 1
    banner = asked.stdout.splitlines().index("== FAILED ==")
    assert asked.stdout.splitlines()[banner + 1].startswith("Result: FAILED, no content")


def test_every_run_of_a_process_plays_the_whole_scenario(
    settings: Settings, tmp_path: Path
) -> None:
    scenario = yaml.safe_load((SCENARIOS / "conclusion_supported.yaml").read_text())
    first_lines = scenario["tools"]["search_logs"]["lines"]
    # the second call of a run would fail: each run must start the tool's results afresh too
    scenario["tools"]["search_logs"] = {"results": [{"lines": first_lines}, {"error": "spent"}]}
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(scenario))
    scripted = settings.model_copy(update={"model": f"scripted:{path}"})
    with bootstrap(scripted, create=True) as services:
        results = [services.chat.ask("s", "why is checkout slow?") for _ in range(2)]
    assert [r.release_outcome for r in results] == [ReleaseOutcome.SUCCESS] * 2
    assert all(r.content and r.content["kind"] == "diagnosis" for r in results)


def test_a_statement_is_printed_as_judged_with_no_character_hidden(
    sqlite_settings: Settings, tmp_path: Path
) -> None:
    """An ANSI escape in a SUPPORTED statement would conceal "not" from whoever reads the
    terminal, though the judge read it: every control or invisible character is spelled out."""
    scenario = yaml.safe_load((SCENARIOS / "conclusion_supported.yaml").read_text())
    conclusion = scenario["steps"][-1]["draft"]["conclusion"]
    conclusion["statement"] = "The deploy is \x1b[8mnot\x1b[0m the cause \u202eof it\u202c."
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(scenario))
    env = store_env(sqlite_settings) | {"HARNESS_MODEL": f"scripted:{path}"}
    asked = harness("ask", "why is checkout slow?", env=env, cwd=tmp_path)
    assert asked.returncode == 0, asked.stderr
    assert "== SUCCESS ==" in asked.stdout.splitlines()
    assert "\x1b" not in asked.stdout and "\u202e" not in asked.stdout
    assert "is \\u001b[8mnot\\u001b[0m the cause \\u202eof it\\u202c." in asked.stdout
    run_id = asked.stdout.split("harness runs explain ")[1].split("`")[0]
    for view in (("runs", "show", run_id), ("runs", "explain", run_id)):
        shown = harness(*view, env=env, cwd=tmp_path)
        assert shown.returncode == 0, shown.stderr
        assert "\x1b" not in shown.stdout and "\u202e" not in shown.stdout, view
        assert "[8mnot" in shown.stdout, view  # each quotes the published conclusion


def test_a_fallback_prints_the_records_behind_it_and_none_of_the_models_words(
    sqlite_settings: Settings, tmp_path: Path
) -> None:
    """No judge read an INSUFFICIENT_EVIDENCE fallback's statements: the harness prints the
    evidence records they rested on, with time and source, and not the model's words."""
    env = store_env(sqlite_settings) | {"HARNESS_MODEL": f"scripted:{SCENARIOS / 'saturated.yaml'}"}
    asked = harness("ask", "why is payments slow?", env=env, cwd=tmp_path)
    assert asked.returncode == 0, asked.stderr
    lines = asked.stdout.splitlines()
    assert "== FALLBACK — INSUFFICIENT_EVIDENCE ==" in lines
    assert "the payments pool ran hot" not in asked.stdout
    assert "not judged" not in asked.stdout
    (observed,) = [line for line in lines if line.startswith("  • At 2026-11-30T08:00:00Z, ")]
    assert observed.endswith(
        'returned "2026-11-30T08:00:00Z payments WARN connection pool 95% used"'
    ), observed


def test_a_fallback_names_the_checks_that_failed(sqlite_settings: Settings, tmp_path: Path) -> None:
    scenario = Path(__file__).resolve().parents[2] / "adversarial" / "every_tool_failed.yaml"
    env = store_env(sqlite_settings) | {"HARNESS_MODEL": f"scripted:{scenario}"}
    asked = harness("ask", "why is checkout slow?", env=env, cwd=tmp_path)
    assert asked.returncode == 0, asked.stderr
    failed = [line for line in asked.stdout.splitlines() if line.startswith("  ✗ ")]
    assert len(failed) == 2 and all("could not be checked" in line for line in failed), failed
    assert "not judged" not in asked.stdout  # no statements, no note


def test_a_knowledge_answer_is_printed_with_the_passages_it_cites(
    sqlite_settings: Settings, tmp_path: Path
) -> None:
    asked = harness(
        "ask",
        "How do I renew an expired TLS certificate?",
        env=store_env(sqlite_settings),
        cwd=tmp_path,
    )
    assert asked.returncode == 0, asked.stderr
    sources = [line for line in asked.stdout.splitlines() if line.startswith("  source: passage ")]
    assert sources and all(line.endswith('"') for line in sources), asked.stdout


def test_a_follow_up_in_a_session_reads_the_same_day_as_the_previous_turns(
    tmp_path: Path,
) -> None:
    first = harness(
        "ask", "--session", "s1", "Why was checkout slow on 2026-11-29?", env={}, cwd=tmp_path
    )
    assert first.returncode == 0, first.stderr
    follow = harness(
        "ask", "--session", "s1", "What about payments on the same day?", env={}, cwd=tmp_path
    )
    assert follow.returncode == 0, follow.stderr
    assert "service=payments, start=2026-11-28T22:00:00Z, end=2026-11-30T00:00:00Z" in follow.stdout
    assert "connection pool exhausted" not in follow.stdout  # 11-28's incident is not this day's
    alone = harness("ask", "What about payments on the same day?", env={}, cwd=tmp_path)
    assert "service=payments" not in alone.stdout  # no session: no day to read, a window is asked
    assert "When did it happen" in alone.stdout, alone.stdout
