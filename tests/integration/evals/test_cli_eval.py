"""``harness eval`` as a user runs it: real processes, each case in an SQLite file of its own."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import yaml

from bootstrap.composition import bootstrap
from domain.tool_invocation import ToolInvocation
from infrastructure.eval_cases import SHIPPED_SUITE, load_suite
from infrastructure.settings import Settings
from tests.integration._cli import harness

CHECKOUT = "Why was checkout slow on 2026-11-29 between 10:00 and 12:00 UTC?"
HOSTILE = "\x1b[31mred\x1b[0m <b>&amp;</b> ]]> \x0b\x7f\u202e"
"""Text no view may pass on as it is: terminal escapes, XML markup, characters XML 1.0 refuses."""


def _write(path: Path, data: Any) -> Path:
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return path


def _checkout_case(**more: Any) -> dict[str, Any]:
    expect = {"outcome": "conclusion", "must": ["v2.14.0"], "must_not": ["v2.13.4 deploy"]}
    return {"id": "checkout-why", "question": CHECKOUT, "expect": expect, **more}


def _events(database: Path) -> list[Any]:
    with bootstrap(Settings(database_url=f"sqlite:///{database}")) as services:
        store = services.store
        notifications = store.recorder.select_notifications(start=1, limit=10_000)
        return [store.mapper.to_domain_event(n) for n in notifications]


def test_the_shipped_suite_runs_with_the_offline_model_and_no_case_is_wrong(
    tmp_path: Path,
) -> None:
    done = harness("eval", env={}, cwd=tmp_path)
    assert done.returncode == 0, done.stdout
    ids = [case.id for case in load_suite([SHIPPED_SUITE]).cases]
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["case", "verdict", "outcome", "tokens", "calls", "latency"]
    rows = [line.split()[:2] for line in lines if line.split()[:1] and line.split()[0] in ids]
    assert [row[0] for row in rows] == ids
    assert {row[1] for row in rows} <= {"correct", "fallback"}, done.stdout  # never wrong
    assert re.match(rf"{len(ids)} cases: \d+ correct, \d+ fallback, 0 wrong, 0 ", lines[-1])
    *progress, recorded = done.stderr.splitlines()
    assert [line.split(":")[0] for line in progress] == [
        f"[{n}/{len(ids)}] {i}" for n, i in enumerate(ids, start=1)
    ]
    assert recorded.startswith("recorded as eval ")


def test_the_table_is_the_same_whatever_the_terminal_width(tmp_path: Path) -> None:
    def table(columns: str) -> list[str]:
        done = harness("eval", env={"COLUMNS": columns}, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        return [re.sub(r"\d+\.\d\ds", "T", line) for line in done.stdout.splitlines()]

    narrow, wide = table("20"), table("300")
    assert narrow == wide
    assert len(narrow[0]) > 20 and len(narrow[-1]) > 20  # not wrapped at 20 columns


def test_json_and_junit_carry_every_case_and_the_totals(tmp_path: Path) -> None:
    junit = tmp_path / "eval.xml"
    done = harness(
        "eval", "run", str(SHIPPED_SUITE), "--json", "--junit", str(junit), env={}, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    cases = len(report["results"])
    totals = report["totals"]
    fallbacks = totals["fallback"]
    assert totals | {"tokens": 0, "model_calls": 0, "latency_ms": 0} == {
        "cases": cases, "correct": cases - fallbacks, "fallback": fallbacks, "wrong": 0,
        "published_wrong": 0, "tokens": 0, "model_calls": 0, "latency_ms": 0,
    }  # fmt: skip
    assert report["totals"]["tokens"] == sum(r["tokens"] for r in report["results"]) > 0
    assert report["model"] == report["settings"]["model"] == "offline"
    assert report["thresholds_missed"] == []
    root = ET.parse(junit).getroot()
    suite = root.find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == (
        str(cases),
        "0",
        str(fallbacks),
    )
    names = [case.get("name") for case in suite.iter("testcase")]
    assert names == [r["case_id"] for r in report["results"]]
    properties = {p.get("name"): p.get("value") for p in suite.find("properties") or []}
    assert properties["model"] == "offline"
    assert properties["published_wrong"] == "0"
    assert properties["correct"] == str(cases - fallbacks)


def _wrong_scenario(tmp_path: Path) -> Path:
    """A model that blames the day before's deploy, with words no view may pass on as they are."""
    deploys = [
        "2026-11-28T09:15:00Z checkout deploy v2.13.4 by alice: gift cards",
        "2026-11-29T09:52:00Z checkout deploy v2.14.0 by alice: new HTTP client",
    ]
    cite = [{"reference": "$1", "excerpt": "checkout deploy v2.13.4 by alice"}]
    return _write(
        tmp_path / "wrong.yaml",
        {
            "route": "DIAGNOSIS",
            "tools": {"list_deployments": {"lines": deploys}},
            "steps": [
                {"tool": "list_deployments", "arguments": {"service": "checkout"}},
                {
                    "draft": {
                        "conclusion": {
                            "statement": f"The checkout v2.13.4 deploy caused it {HOSTILE}",
                            "citations": cite,
                        },
                        "facts": [],
                        "missing_info": [],
                    }
                },
            ],
            "judge": "SUPPORTED",
        },
    )


def test_a_model_wrong_on_purpose_is_counted_published_and_wrong_and_the_eval_fails(
    tmp_path: Path,
) -> None:
    cases = _write(tmp_path / "cases.yaml", {"cases": [_checkout_case()]})
    env = {"HARNESS_MODEL": f"scripted:{_wrong_scenario(tmp_path)}"}
    junit = tmp_path / "eval.xml"
    done = harness("eval", "run", str(cases), "--junit", str(junit), env=env, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    row = done.stdout.splitlines()[1].split()
    assert row[:3] == ["checkout-why", "wrong*", "diagnosis"]
    assert "    - missing: v2.14.0" in done.stdout.splitlines()
    assert "    - must not say: v2.13.4 deploy" in done.stdout.splitlines()
    (said,) = [line for line in done.stdout.splitlines() if line.startswith("    said: ")]
    assert "\x1b" not in done.stdout and "\\u001b[31mred" in said
    assert "1 case: 0 correct, 0 fallback, 1 wrong, 1 published-and-wrong" in done.stdout
    assert "threshold missed: published-and-wrong 1 is above --max-published-wrong 0" in (
        " ".join(done.stderr.split())
    )
    (failure,) = ET.parse(junit).getroot().iter("failure")
    assert failure.get("type") == "published-and-wrong"
    assert "<b>&amp;</b> ]]>" in (failure.text or "")

    allowed = harness(
        "eval", "run", str(cases), "--max-published-wrong", "1", "--json", env=env, cwd=tmp_path
    )
    assert allowed.returncode == 0, allowed.stderr
    assert json.loads(allowed.stdout)["totals"]["published_wrong"] == 1
    strict = harness("eval", "run", str(cases), "--min-correct", "0.5", "--max-published-wrong",
                     "1", env=env, cwd=tmp_path)  # fmt: skip
    assert strict.returncode == 1
    assert "correct 0/1 (0.0%) is below --min-correct 0.5" in " ".join(strict.stderr.split())


def _fixture() -> dict[str, Any]:
    """Recorded tools telling another story than the sample data: a deploy v9.9.9."""
    errors = ["2026-11-29T10:05:00Z checkout ERROR upstream timeout after 30s calling recorder"]
    deploys = ["2026-11-29T09:40:00Z checkout deploy v9.9.9 by recorder: recorded client"]
    return {
        "tools": [
            {"name": "list_alerts", "results": []},
            {"name": "search_logs", "results": [{"match": {"level": "ERROR"}, "lines": errors}]},
            {"name": "list_deployments", "results": [{"lines": deploys}]},
            {"name": "query_metrics", "results": [{"error": "metrics store unreachable"}]},
        ]
    }


def test_a_fixture_case_is_served_its_recorded_results_and_never_the_live_tools(
    tmp_path: Path,
) -> None:
    case = _checkout_case(fixture=_fixture())
    case["expect"] = {"outcome": "conclusion", "must": ["v9.9.9"], "must_not": ["v2.14.0"]}
    cases = _write(tmp_path / "cases.yaml", {"cases": [case]})
    stores = tmp_path / "stores"
    done = harness("eval", "run", str(cases), "--store-dir", str(stores), env={}, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[1].split()[:3] == ["checkout-why", "correct", "diagnosis"]
    (database,) = stores.iterdir()
    assert database.name == "001-checkout-why.db"
    events = _events(database)
    started = [e for e in events if isinstance(e, ToolInvocation.ToolInvocationStarted)]
    assert {e.tool for e in started} == {
        "list_alerts", "search_logs", "list_deployments", "query_metrics"
    }  # fmt: skip
    assert {e.origin for e in started} == {"fixture"}  # the sample data was there, never read
    failed = [e for e in events if isinstance(e, ToolInvocation.ToolInvocationFailed)]
    assert {e.message for e in failed} == {"metrics store unreachable"}


def test_cases_of_one_session_share_a_store_and_a_session_in_suite_order(tmp_path: Path) -> None:
    first = _checkout_case(session="on-call")
    follow = {
        "id": "follow-up",
        "session": "on-call",
        "question": "Why did inventory pods restart on 2026-11-30?",
        "expect": {"outcome": "conclusion", "must": ["OOMKilled"]},
    }
    alone = _checkout_case(id="alone")
    cases = _write(tmp_path / "cases.yaml", {"cases": [first, alone, follow]})
    stores = tmp_path / "stores"
    done = harness("eval", "run", str(cases), "--store-dir", str(stores), env={}, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(p.name for p in stores.glob("*.db")) == ["001-session-on-call.db", "002-alone.db"]
    started = [
        e for e in _events(stores / "001-session-on-call.db") if type(e).__name__ == "RunStarted"
    ]
    assert [(e.session_id, e.query) for e in started] == [
        ("on-call", CHECKOUT), ("on-call", follow["question"])
    ]  # fmt: skip


def test_a_bad_case_file_is_one_line_naming_the_file_the_case_and_the_field(
    tmp_path: Path,
) -> None:
    bad = _checkout_case()
    bad["expect"] = {"outcome": "conclusion", "must": ["v2.14.0"], "fallback_type": "NOPE"}
    cases = _write(tmp_path / "bad.yaml", {"cases": [_checkout_case(id="fine"), bad]})
    done = harness("eval", "run", str(cases), env={}, cwd=tmp_path)
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"error: {cases}: case 'checkout-why': expect.fallback_type: ")
    assert done.stdout == ""

    good = _write(tmp_path / "good.yaml", _checkout_case())
    unknown = harness("eval", "run", str(good), "--case", "nope", env={}, cwd=tmp_path)
    assert unknown.returncode == 2
    assert unknown.stderr.startswith("error: --case 'nope': no such case in ")
    missing = harness("eval", "run", str(tmp_path / "none.yaml"), env={}, cwd=tmp_path)
    assert (missing.returncode, missing.stderr.count("\n")) == (2, 1)
    assert "none.yaml: no such file or directory" in missing.stderr


def test_an_option_out_of_range_or_an_unwritable_output_is_refused_before_any_case_runs(
    tmp_path: Path,
) -> None:
    share = harness("eval", "--min-correct", "3", env={}, cwd=tmp_path)
    assert share.returncode == 2 and "--min-correct" in share.stderr
    nowhere = tmp_path / "no" / "eval.xml"
    junit = harness("eval", "--junit", str(nowhere), env={}, cwd=tmp_path)
    assert junit.returncode == 2 and "[1/" not in junit.stderr
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "x.db").write_text("")
    used = harness("eval", "--store-dir", str(tmp_path / "used"), env={}, cwd=tmp_path)
    assert used.returncode == 2 and "new or empty directory" in used.stderr


def test_case_options_pick_cases_in_suite_order(tmp_path: Path) -> None:
    ids = [case.id for case in load_suite([SHIPPED_SUITE]).cases]
    picked = [ids[-1], ids[0]]
    done = harness("eval", "--json", *(f"--case={i}" for i in picked), env={}, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert [r["case_id"] for r in report["results"]] == [ids[0], ids[-1]]
    assert report["totals"]["cases"] == 2


def test_an_evaluation_is_recorded_and_listed_by_model(tmp_path: Path) -> None:
    done = harness("eval", "--case=kb-log-retention", env={}, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    recorded = re.search(r"recorded as eval ([0-9a-f-]{36})", done.stderr)
    assert recorded is not None, done.stderr
    listed = harness("eval", "list", env={}, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert recorded.group(1)[:8] in listed.stdout and "offline" in listed.stdout


def test_imported_holmes_cases_run_on_their_recordings_and_none_is_published_wrong(
    tmp_path: Path,
) -> None:
    holmes = Path(__file__).resolve().parents[2] / "evals" / "holmes"
    imported = tmp_path / "imported.yaml"
    converted = harness("eval", "import-holmes", str(holmes), str(imported), env={}, cwd=tmp_path)
    assert converted.returncode == 0, converted.stderr
    stores = tmp_path / "stores"
    done = harness(
        "eval", "run", str(imported), "--json", "--store-dir", str(stores), env={}, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["totals"]["cases"] >= 3 and report["totals"]["published_wrong"] == 0
    assert report["totals"]["correct"] >= 3  # the recordings over the sample incidents suffice
    origins = {
        event.origin
        for database in stores.glob("*.db")
        for event in _events(database)
        if isinstance(event, ToolInvocation.ToolInvocationStarted)
    }
    assert origins == {"fixture"}  # the recordings were served, never the live tools


def test_a_store_that_cannot_record_loses_no_report_and_keeps_the_exit_code(
    tmp_path: Path,
) -> None:
    junit = tmp_path / "eval.xml"
    (tmp_path / "blocked").write_text("a file where the store's directory should be")
    env = {"HARNESS_DATABASE_URL": f"sqlite:///{tmp_path / 'blocked' / 'harness.db'}"}
    done = harness(
        "eval", "--json", "--junit", str(junit), "--case=kb-log-retention", env=env, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["totals"]["correct"] == 1 and junit.is_file()
    assert "warning: the evaluation was not recorded in" in done.stderr
    assert "Traceback" not in done.stderr
