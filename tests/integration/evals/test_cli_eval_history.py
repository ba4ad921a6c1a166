"""``harness eval list`` and ``harness eval compare A B``: real processes on real stores.

The commands run as a user runs them, in processes of their own. The evaluations are recorded
in the log only: the commands bring the read tables up to date themselves.
"""

from __future__ import annotations

import dataclasses
import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from application.eval_records import record_eval
from bootstrap.composition import bootstrap
from infrastructure.settings import Settings
from tests.eval_reports import AFTER, AFTER_ID, BEFORE, BEFORE_ID
from tests.integration._cli import ROOT, store_env

EVAL_APP = "from cli.main import app\napp()\n"
"""The ``harness`` command line, run as ``python -c`` (this checkout on the path)."""
TWIN_ID = UUID("0b1e7a55-1000-4000-8000-000000000003")
"""Shares its first eight digits with BEFORE_ID."""


def harness_eval(
    settings: Settings, *args: str, cwd: Path, **env: str
) -> subprocess.CompletedProcess[str]:
    """``harness eval ARGS`` in a process of its own, output captured (not a terminal)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    clean["PYTHONPATH"] = str(ROOT) + os.pathsep + clean.get("PYTHONPATH", "")
    return subprocess.run(
        [sys.executable, "-c", EVAL_APP, "eval", *args],
        env=clean | store_env(settings) | env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def on_a_terminal(settings: Settings, *args: str, cwd: Path, columns: int) -> str:
    """What ``harness eval ARGS`` prints on a terminal ``columns`` wide (stdout and stderr)."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    clean = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    clean |= {"PYTHONPATH": str(ROOT), "COLUMNS": str(columns), "TERM": "dumb"}
    process = subprocess.Popen(
        [sys.executable, "-c", EVAL_APP, "eval", *args],
        env=clean | store_env(settings),
        cwd=cwd,
        stdin=follower,
        stdout=follower,
        stderr=subprocess.DEVNULL,
    )
    os.close(follower)
    said = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the process closed the terminal: all is read
            break
        if not chunk:
            break
        said += chunk
    os.close(leader)
    assert process.wait(timeout=120) == 0
    return said.decode().replace("\r\n", "\n")


@pytest.fixture
def recorded(settings: Settings) -> Settings:
    """A store with the two evaluations in its log (its read tables not caught up)."""
    with bootstrap(settings, create=True) as services:
        record_eval(services.store, BEFORE)
        record_eval(services.store, AFTER)
    return settings


def test_compare_shows_the_verdict_change_and_the_published_wrong_delta(
    recorded: Settings, tmp_path: Path
) -> None:
    done = harness_eval(recorded, "compare", str(BEFORE_ID)[:8], str(AFTER_ID), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    said = done.stdout
    assert "  checkout-deploy-why: correct → wrong, newly published-and-wrong\n" in said
    assert "    - missing: v2.14.0\n" in said
    assert "  payments-yesterday: fallback → correct\n" in said
    assert "  added-case: only in B\n" in said and "  dropped-case: only in A\n" in said
    assert re.search(r"^published-wrong +0 +1 +\+1$", said, re.MULTILINE), said
    assert re.search(r"^correct +3 +2 +-1$", said, re.MULTILINE), said
    assert "  model: 'offline' → 'gpt-4o-mini'\n" in said
    assert "  setting provider: 'offline' → 'openai'\n" in said
    assert "newly published-and-wrong in B: 1 (checkout-deploy-why)" in said
    assert "restart-runbook" not in said  # the same in both: not a change


def test_compare_as_json_says_the_same(recorded: Settings, tmp_path: Path) -> None:
    done = harness_eval(recorded, "compare", str(BEFORE_ID), str(AFTER_ID), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    assert found["newly_published_wrong"] == ["checkout-deploy-why"]
    totals = {t["name"]: t["delta"] for t in found["totals"]}
    assert (totals["published_wrong"], totals["correct"], totals["wrong"]) == (1, -1, 2)
    whats = {c["case_id"]: c["what"] for c in found["cases"]}
    assert whats["checkout-deploy-why"] == "correct → wrong, newly published-and-wrong"
    assert found["evaluated"] == [{"name": "model", "before": "offline", "after": "gpt-4o-mini"}]


def test_list_shows_the_history_newest_first(recorded: Settings, tmp_path: Path) -> None:
    done = harness_eval(recorded, "list", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    header, newest, oldest = done.stdout.splitlines()
    assert header.split()[:4] == ["when", "(UTC)", "eval", "suite"]
    assert newest.split() == [
        "2026-12-01", "11:30", str(AFTER_ID)[:8], "suites/shipped", "gpt-4o-mini",
        "2/4", "0/4", "2/4", "1/4",
    ]  # fmt: skip
    assert oldest.split()[2:5] == [str(BEFORE_ID)[:8], "suites/shipped", "offline"]
    assert done.stderr.strip() == "2 of 2 evaluation(s)"
    only = harness_eval(recorded, "list", "--model", "offline", "--json", cwd=tmp_path)
    body = json.loads(only.stdout)
    assert body["count"] == 1 and body["data"][0]["eval_id"] == str(BEFORE_ID)


def test_a_short_id_grows_until_it_is_unique(sqlite_settings: Settings, tmp_path: Path) -> None:
    with bootstrap(sqlite_settings, create=True) as services:
        record_eval(services.store, BEFORE)
        record_eval(services.store, dataclasses.replace(BEFORE, eval_id=TWIN_ID))
    lines = harness_eval(sqlite_settings, "list", cwd=tmp_path).stdout.splitlines()[1:]
    shown = {line.split()[2] for line in lines}
    assert shown == {str(BEFORE_ID)[:10], str(TWIN_ID)[:10]}  # 10 digits tell them apart


def test_outputs_are_the_same_on_any_terminal_width(recorded: Settings, tmp_path: Path) -> None:
    for args in (("list",), ("compare", str(BEFORE_ID), str(AFTER_ID))):
        piped = harness_eval(recorded, *args, cwd=tmp_path).stdout
        narrow = on_a_terminal(recorded, *args, cwd=tmp_path, columns=30)
        wide = on_a_terminal(recorded, *args, cwd=tmp_path, columns=300)
        assert narrow == wide == piped, args


def test_an_empty_history_says_so(sqlite_settings: Settings, tmp_path: Path) -> None:
    with bootstrap(sqlite_settings, create=True):
        pass
    done = harness_eval(sqlite_settings, "list", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "no evaluation recorded yet: run `harness eval` first\n"


BAD_IDS = {
    "unknown": ("ffff0000", "no eval id starts with 'ffff0000'"),
    "ambiguous": ("0b1e7a55", "eval id prefix '0b1e7a55' is ambiguous"),
    "too short": ("0b1", "is not an eval id"),
    "not hex": ("zzzz-not-an-id", "is not an eval id"),
    "empty": ("", "is not an eval id"),
    "an escape": ("\x1b[2Jabcd", "is not an eval id"),
}


@pytest.mark.parametrize("bad", BAD_IDS)
def test_a_bad_or_unknown_id_exits_2_in_one_line(
    sqlite_settings: Settings, tmp_path: Path, bad: str
) -> None:
    with bootstrap(sqlite_settings, create=True) as services:
        record_eval(services.store, BEFORE)
        record_eval(services.store, dataclasses.replace(BEFORE, eval_id=TWIN_ID))
    given, said = BAD_IDS[bad]
    done = harness_eval(sqlite_settings, "compare", str(BEFORE_ID), given, cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == ""
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("error: ") and said in line, line
    assert "\x1b" not in done.stderr and "Traceback" not in done.stderr


def test_text_from_a_suite_never_acts_on_the_terminal(
    sqlite_settings: Settings, tmp_path: Path
) -> None:
    question = "Why was checkout slow?\x1b[2J\rGOTCHA"
    reason = "missing: v2.14.0\x1b]0;owned\x07"
    hostile = dataclasses.replace(
        AFTER.results[0], question=question, reasons=(reason, "second\nline")
    )
    after = dataclasses.replace(AFTER, results=(hostile, *AFTER.results[1:]))
    with bootstrap(sqlite_settings, create=True) as services:
        record_eval(services.store, BEFORE)
        record_eval(services.store, after)
    done = harness_eval(sqlite_settings, "compare", str(BEFORE_ID), str(AFTER_ID), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout and "\r" not in done.stdout and "\x07" not in done.stdout
    assert "    question: Why was checkout slow?\\u001b[2J\\u000dGOTCHA\n" in done.stdout
    assert "    - missing: v2.14.0\\u001b]0;owned\\u0007\n" in done.stdout
    assert "    - second line\n" in done.stdout  # one reason, one line
    as_json = harness_eval(
        sqlite_settings, "compare", str(BEFORE_ID), str(AFTER_ID), "--json", cwd=tmp_path
    )
    assert "\x1b" not in as_json.stdout
    cases = json.loads(as_json.stdout)["cases"]
    assert cases[0]["question"] == question  # JSON keeps the text exactly, escaped
