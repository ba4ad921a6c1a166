"""``harness audit export`` and ``verify FILE`` on a realistic log: clean, then tampered with.

The log is built once (every SPEC §10 row, runtime paths, owned sessions) on an SQLite file and
exported through the CLI; each test edits a copy of the export the way a tamperer would and
checks that the report names the exact event, with the right exit code.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from uuid import UUID, uuid4

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import SecretStr

from application.audit.records import FIELDS, AuditRecord, type_of
from application.audit.replay import EVENT_TOPICS
from application.audit.verify import verify_records
from bootstrap.composition import bootstrap
from domain.release_states import ReleaseOutcome
from domain.states import RunState
from infrastructure.settings import Settings
from projections.sse_feed import run_feed
from tests.integration._audit_helpers import (
    build_log,
    clean_exit,
    described,
    env_of,
    harness_cli,
    index_of,
    load,
    named,
    relink,
    save,
    violations,
)
from tests.integration._projection_helpers import run_scenario


@dataclass(frozen=True)
class Logged:
    env: dict[str, str]
    export: Path
    heads: Path
    head: int


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory) -> Logged:
    directory = tmp_path_factory.mktemp("audit")
    settings = Settings(database_url=f"sqlite:///{directory / 'harness.db'}")
    with bootstrap(settings, create=True) as services:
        build_log(services)
        head = services.store.head()
    env = env_of(settings)
    export, heads = directory / "audit.jsonl", directory / "heads.json"
    done = harness_cli(env, "audit", "export", "--all", "--out", str(export), "--heads", str(heads))
    assert done.exit_code == 0, done.stderr
    assert f"exported {head} events" in done.stderr
    return Logged(env, export, heads, head)


def verify(logged: Logged, path: Path, *args: str) -> tuple[int, list[str]]:
    """Verify an export; the exit code and the report's lines."""
    result = harness_cli(logged.env, "audit", "verify", str(path), *args)
    assert clean_exit(result), result.exception
    return result.exit_code, result.stdout.splitlines()


def test_the_export_holds_every_event_and_verifies_clean(logged: Logged) -> None:
    records = load(logged.export)
    assert [r["position"] for r in records] == list(range(1, logged.head + 1))
    assert all(tuple(r) == FIELDS for r in records)
    assert all(r["hash"].startswith("sha256:") and r["timestamp"] for r in records)
    states = {r["payload"]["state"]["_data_"] for r in records if r["type"] == "RUN_TERMINATED"}
    outcomes = {
        r["payload"]["release_outcome"]["_data_"] for r in records if r["type"] == "RUN_FINISHED"
    }
    assert states == {s.value for s in RunState} - {"RUNNING"}  # every termination of §10
    assert outcomes == {o.value for o in ReleaseOutcome}
    assert "SESSION_CLAIMED" in {r["type"] for r in records}

    result = harness_cli(logged.env, "audit", "verify", str(logged.export))
    assert result.exit_code == 0, result.stdout
    assert violations(result) == []
    runs = sum(r["type"] == "RUN_STARTED" for r in records)
    summary = result.stdout.splitlines()[-1]
    assert summary.startswith(f"{logged.head} events, ")
    assert f"{runs} runs ({runs} finished, 0 still running): no violations" in summary
    as_json = json.loads(
        harness_cli(logged.env, "audit", "verify", str(logged.export), "--json").stdout
    )
    assert (as_json["clean"], as_json["events"], as_json["violations"]) == (True, logged.head, [])


def test_a_run_export_holds_its_whole_streams_and_verifies(logged: Logged) -> None:
    records = load(logged.export)
    first_tool = records[index_of(records, "TOOL_INVOCATION_STARTED")]
    run_id = UUID(first_tool["payload"]["run_id"]["_data_"])
    exported = harness_cli(logged.env, "audit", "export", str(run_id))
    assert exported.exit_code == 0, exported.stderr
    mine = [json.loads(line) for line in exported.stdout.splitlines()]
    streams = {r["stream"] for r in mine}
    assert {str(run_id), first_tool["stream"]} <= streams and len(streams) >= 3
    assert mine == [r for r in records if r["stream"] in streams]  # whole streams, log order
    piped = harness_cli(logged.env, "audit", "verify", "-", stdin=exported.stdout)
    assert piped.exit_code == 0, piped.stdout
    assert "1 run (1 finished, 0 still running): no violations" in piped.stdout


def test_an_unknown_run_is_a_clear_error(logged: Logged) -> None:
    missing = harness_cli(logged.env, "audit", "export", str(uuid4()))
    assert missing.exit_code == 2 and clean_exit(missing)
    assert "no run" in missing.stderr and missing.stdout == ""
    malformed = harness_cli(logged.env, "audit", "export", "not-a-run")
    assert malformed.exit_code == 2 and "not a run id" in malformed.stderr
    neither = harness_cli(logged.env, "audit", "export")
    assert neither.exit_code == 2 and "--all" in neither.stderr


def test_an_edited_event_is_named(logged: Logged, tmp_path: Path) -> None:
    records = load(logged.export)
    edited = records[index_of(records, "RUN_FINISHED", 3)]
    edited["payload"]["duration_ms"] += 1
    code, lines = verify(logged, save(tmp_path / "edited.jsonl", records))
    assert code == 1
    assert [line for line in lines if line.startswith("[")] == [
        f"[chain] {described(edited)}: its chain link does not match its content and its"
        " predecessor's link: the event was edited, or the event before it in its stream was"
        " dropped, inserted or reordered"
    ]


def test_a_dropped_event_is_named(logged: Logged, tmp_path: Path) -> None:
    records = load(logged.export)
    index = index_of(records, "AGENT_MODEL_STEP", 5)
    dropped = records.pop(index)
    after = next(r for r in records[index:] if r["stream"] == dropped["stream"])
    result = harness_cli(logged.env, "audit", "verify", str(save(tmp_path / "d.jsonl", records)))
    assert result.exit_code == 1
    (gap,) = named(result, after, "order")
    assert f"version {dropped['version']} of its stream is missing before it (dropped)" in gap.text
    assert named(result, after, "chain")
    assert {f.text.split(":")[0] for f in violations(result)} == {described(after)}


def test_an_inserted_event_is_named(logged: Logged, tmp_path: Path) -> None:
    records = load(logged.export)
    index = index_of(records, "TOOL_PROGRESS", 2)
    copied = copy.deepcopy(records[index])
    result = harness_cli(
        logged.env,
        "audit",
        "verify",
        str(
            save(tmp_path / "copied.jsonl", [*records[: index + 1], copied, *records[index + 1 :]])
        ),
    )
    assert result.exit_code == 1
    assert named(result, copied, "order") and named(result, copied, "chain")

    # a forged second termination at the end of its run's stream, with a made-up link
    terminated = records[index_of(records, "RUN_TERMINATED", 4)]
    forged = copy.deepcopy(terminated)
    last = max(r["version"] for r in records if r["stream"] == forged["stream"])
    forged |= {"position": logged.head + 1, "version": last + 1, "hash": "sha256:" + "0" * 64}
    result = harness_cli(
        logged.env, "audit", "verify", str(save(tmp_path / "forged.jsonl", [*records, forged]))
    )
    assert result.exit_code == 1
    assert named(result, forged, "chain")
    assert any("second termination" in f.text for f in named(result, forged, "SPEC §16.1"))


def test_reordered_lines_are_named(logged: Logged, tmp_path: Path) -> None:
    records = load(logged.export)
    first = index_of(records, "ROUTING_ATTEMPT", 6)
    second = next(
        i
        for i in range(first + 1, len(records))
        if records[i]["stream"] == records[first]["stream"]
    )
    records[first], records[second] = records[second], records[first]
    result = harness_cli(logged.env, "audit", "verify", str(save(tmp_path / "r.jsonl", records)))
    assert result.exit_code == 1
    (moved,) = named(result, records[second], "order")
    assert "out of log order" in moved.text


def test_swapped_versions_are_named(logged: Logged, tmp_path: Path) -> None:
    records = load(logged.export)
    first = index_of(records, "ROUTING_DECISION", 6)
    second = next(
        i
        for i in range(first + 1, len(records))
        if records[i]["stream"] == records[first]["stream"]
    )
    a, b = records[first], records[second]
    a["version"], b["version"] = b["version"], a["version"]
    result = harness_cli(logged.env, "audit", "verify", str(save(tmp_path / "v.jsonl", records)))
    assert result.exit_code == 1
    assert named(result, a, "order") and named(result, a, "chain")
    assert named(result, b, "order") and named(result, b, "chain")


def test_an_invariant_broken_behind_valid_links_is_named(logged: Logged, tmp_path: Path) -> None:
    """Without a key, a rewritten stream's links can be recomputed; the invariants still hold it."""
    records = load(logged.export)
    empty = [
        r["stream"]
        for r in records
        if r["type"] == "TOOL_INVOCATION_READY"
        and r["payload"]["evidence_status"]["_data_"] == "NO_EVIDENCE"
    ]
    assert empty, "the log has a NO_EVIDENCE result"
    owner = next(
        r["payload"]["run_id"]["_data_"]
        for r in records
        if r["stream"] == empty[0] and r["version"] == 1
    )
    decision = next(
        r for r in records if r["type"] == "RELEASE_DECISION" and r["stream"] == str(UUID(owner))
    )
    facts = [
        {
            "statement": "no errors anywhere",
            "citations": [{"reference": empty[0], "excerpt": "no matching records"}],
            "references": [empty[0]],
        }
    ]
    decision["payload"]["content"]["verified_facts"] = facts
    relink(records, decision["stream"])
    code, lines = verify(logged, save(tmp_path / "promoted.jsonl", records))
    assert code == 1
    found = [line for line in lines if line.startswith("[")]
    assert (
        f"[SPEC §16.5] {described(decision)}: cites invocation {empty[0]} (NO_EVIDENCE) as"
        in found[0]
    )
    assert all(described(decision) in line for line in found)


def test_malformed_files_are_unusable_input(logged: Logged, tmp_path: Path) -> None:
    lines = logged.export.read_text(encoding="utf-8").splitlines()
    missing = json.loads(lines[2])
    del missing["hash"]
    cases = {
        "not-json.jsonl": ("garbage\n", "line 1: not JSON"),
        "missing.jsonl": (
            "\n".join([lines[0], lines[1], json.dumps(missing)]) + "\n",
            "line 3: missing field(s) hash",
        ),
        "empty.jsonl": ("", "holds no events"),
        "huge-number.jsonl": ('{"position": ' + "9" * 5000 + "}\n", "line 1: not readable JSON"),
        "nested.jsonl": ("[" * 100_000 + "\n", "line 1: not readable JSON (nested too deeply)"),
    }
    for name, (text, message) in cases.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        result = harness_cli(logged.env, "audit", "verify", str(tmp_path / name))
        assert (result.exit_code, clean_exit(result)) == (2, True), name
        assert message in result.stderr.replace("\n", " "), (name, result.stderr)
    (tmp_path / "binary.jsonl").write_bytes(b"\xff\xfe\x00garbage")
    binary = harness_cli(logged.env, "audit", "verify", str(tmp_path / "binary.jsonl"))
    assert binary.exit_code == 2 and "not UTF-8" in binary.stderr
    absent = harness_cli(logged.env, "audit", "verify", str(tmp_path / "absent.jsonl"))
    assert absent.exit_code == 2 and "cannot read" in absent.stderr


def test_kept_heads_reveal_a_tail_rewritten_without_the_key(logged: Logged, tmp_path: Path) -> None:
    records = load(logged.export)
    finished = records[index_of(records, "RUN_FINISHED", 1)]
    finished["payload"]["duration_ms"] += 1000
    relink(records, finished["stream"])
    rewritten = save(tmp_path / "rewritten.jsonl", records)
    assert verify(logged, rewritten)[0] == 0  # the limit of a keyless chain
    code, lines = verify(logged, rewritten, "--heads", str(logged.heads))
    assert code == 1
    assert [line for line in lines if line.startswith("[")] == [
        f"[heads] {described(finished)}: its link is not the one kept as its stream's head:"
        " the stream was rewritten"
    ]
    assert verify(logged, logged.export, "--heads", str(logged.heads))[0] == 0


def test_keyed_chains_verify_with_the_key_only(tmp_path: Path) -> None:
    key = "the audit key of this test, long enough"
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'keyed.db'}", audit_key=SecretStr(key))
    with bootstrap(settings, create=True) as services:
        run_scenario(services, "limited_checks")
    export = tmp_path / "keyed.jsonl"
    keyed_env = env_of(settings, key)
    assert harness_cli(keyed_env, "audit", "export", "--all", "--out", str(export)).exit_code == 0
    assert all(r["hash"].startswith("hmac-sha256:") for r in load(export))

    plain_env = env_of(settings)
    assert harness_cli(keyed_env, "audit", "verify", str(export)).exit_code == 0
    key_file, wrong_key = tmp_path / "audit.key", tmp_path / "wrong.key"
    key_file.write_text(key + "\n", encoding="utf-8")
    wrong_key.write_text("not the key", encoding="utf-8")
    right = harness_cli(plain_env, "audit", "verify", str(export), "--key-file", str(key_file))
    assert right.exit_code == 0
    wrong = harness_cli(plain_env, "audit", "verify", str(export), "--key-file", str(wrong_key))
    assert wrong.exit_code == 1
    assert {f.rule for f in violations(wrong)} == {"chain"}
    assert len(violations(wrong)) == len(load(export))  # every link is wrong under another key
    keyless = harness_cli(plain_env, "audit", "verify", str(export))
    assert keyless.exit_code == 1 and "verify with the same key" in keyless.stdout


def test_export_and_verify_as_real_processes(logged: Logged, tmp_path: Path) -> None:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    root = str(Path(__file__).resolve().parents[3])
    env = clean | logged.env | {"PYTHONPATH": root + os.pathsep + clean.get("PYTHONPATH", "")}
    command = [sys.executable, "-c", "from cli.main import app; app()", "audit"]
    exported = subprocess.run(
        [*command, "export", "--all"], env=env, capture_output=True, text=True, timeout=120
    )
    assert exported.returncode == 0, exported.stderr
    verified = subprocess.run(
        [*command, "verify", "-"],
        input=exported.stdout,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert verified.returncode == 0 and "no violations" in verified.stdout, verified.stdout
    (tmp_path / "bad.jsonl").write_text('{"position": 1}\n', encoding="utf-8")
    bad = subprocess.run(
        [*command, "verify", str(tmp_path / "bad.jsonl")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2 and "missing field" in bad.stderr
    assert "Traceback" not in bad.stderr + bad.stdout


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)


TOPICS = sorted(EVENT_TOPICS)
ODD_VALUES = [{"_type_": "Budget", "_data_": 1}, {"_type_": "RunState", "_data_": "SUCCESS"}]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_rewritten_event_is_reported_not_a_crash(logged: Logged, data: st.DataObject) -> None:
    """An event rewritten into any shape, its stream relinked: named or harmless, never a crash."""
    records = load(logged.export)
    record = records[data.draw(st.integers(0, len(records) - 1), label="record")]
    if data.draw(st.booleans(), label="another topic"):
        record["topic"] = data.draw(st.sampled_from(TOPICS), label="topic")
        record["type"] = type_of(record["topic"])
    else:
        field = data.draw(st.sampled_from(sorted(record["payload"])), label="field")
        record["payload"][field] = data.draw(json_values | st.sampled_from(ODD_VALUES))
    relink(records, record["stream"])
    report = verify_records([AuditRecord.from_json(r) for r in records], feed=run_feed)
    assert not [v for v in report.violations if v.rule in ("chain", "order")]
    broken = [
        v.record.position for v in report.violations if v.rule in ("decode", "replay") and v.record
    ]
    assert not broken or record["position"] in broken  # the rewritten event is named itself


def test_heads_of_an_increment_and_unreadable_keys_are_refused(
    logged: Logged, tmp_path: Path
) -> None:
    heads = tmp_path / "heads.json"
    increment = harness_cli(
        logged.env, "audit", "export", "--all", "--after", "5", "--heads", str(heads)
    )
    assert (increment.exit_code, clean_exit(increment)) == (2, True)
    assert "--heads with --after" in " ".join(increment.stderr.split()) and not heads.exists()
    (tmp_path / "empty.key").write_text("\n", encoding="utf-8")
    for name, message in (("absent.key", "cannot read the key file"), ("empty.key", "is empty")):
        args = ("audit", "verify", str(logged.export), "--key-file", str(tmp_path / name))
        result = harness_cli(logged.env, *args)
        assert (result.exit_code, clean_exit(result)) == (2, True), name
        assert message in " ".join(result.stderr.split()), (name, result.stderr)
