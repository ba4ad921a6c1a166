"""Ed25519 signatures: what the public key alone catches, and what never leaks the private key.

A log written with ``HARNESS_AUDIT_SIGNING_KEY_FILE`` signs every checkpoint and every export.
An attacker with the database (or the file) but not the private key rewrites a finished run,
recomputes every link (the run's, the checkpoint's, the checkpoint stream's): a plain verify
passes, ``verify --public-key`` names the checkpoint whose signature no longer verifies. A cut
tail, a wrong key, a missing signature and a rotated key are named; the private key appears in
no output, no export and no database file.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from application.store import events_of
from bootstrap.composition import bootstrap
from domain.checkpoint import CHECKPOINTS_ID, AuditCheckpoint
from infrastructure.settings import Settings
from tests.integration._audit_helpers import (
    clean_exit,
    env_of,
    harness_cli,
    index_of,
    relink,
    violations,
)
from tests.integration._projection_helpers import run_scenario


@dataclass(frozen=True)
class Signed:
    """A signed SQLite log with two finished runs, a signed checkpoint and a signed export."""

    settings: Settings
    env: dict[str, str]
    private: Path
    public: Path
    key_id: str
    export: Path
    outputs: list[str]
    """Everything the commands printed (stdout and stderr)."""


def keygen(directory: Path, outputs: list[str]) -> tuple[Path, Path, str]:
    directory.mkdir(exist_ok=True)
    made = harness_cli({}, "audit", "keygen", "--out", str(directory))
    assert made.exit_code == 0, made.output
    outputs.append(made.output)
    key_id = made.stdout.split()[2]
    return directory / "audit-signing.key", directory / "audit-signing.pub", key_id


def ran(settings: Settings, *runs: tuple[str, str]) -> None:
    """Run scenarios (name, session) on the log, and bring the read tables up to date."""
    with bootstrap(settings, create=True) as services:
        for scenario, session in runs:
            run_scenario(services, scenario, session)
        services.projector().catch_up()


def run(env: dict[str, str], outputs: list[str], *args: str) -> Any:
    result = harness_cli(env, *args)
    assert clean_exit(result), result.exception
    outputs.append(result.stdout + result.stderr)
    return result


@pytest.fixture
def signed(settings: Settings, tmp_path: Path) -> Signed:
    """On each store: runs written by a writer without the key, signed by `audit checkpoint`."""
    outputs: list[str] = []
    private, public, named = keygen(tmp_path / "keys", outputs)
    env = env_of(settings) | {"HARNESS_AUDIT_SIGNING_KEY_FILE": str(private)}
    ran(settings, ("conclusion_supported", "session-1"), ("missing_context", "session-2"))
    assert "recorded 1 checkpoint" in run(env, outputs, "audit", "checkpoint").stdout
    export = tmp_path / "signed.jsonl"
    assert run(env, outputs, "audit", "export", "--all", "--out", str(export)).exit_code == 0
    return Signed(settings, env, private, public, named, export, outputs)


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def save(path: Path, records: list[dict[str, Any]]) -> Path:
    text = "".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in records)
    path.write_text(text, encoding="utf-8")
    return path


def verify(signed: Signed, *args: str) -> tuple[int, list[str], str]:
    result = run(signed.env, signed.outputs, "audit", "verify", *args)
    found = [f"[{v.rule}] {v.text}" for v in violations(result)]
    return result.exit_code, found, result.stdout


def test_a_signed_log_and_export_verify_with_the_public_key(signed: Signed) -> None:
    last = lines(signed.export)[-1]
    assert set(last) == {"signed", "signature"} and last["signature"]["key_id"] == signed.key_id
    assert last["signed"]["events"] == len(lines(signed.export)) - 1
    code, found, out = verify(signed, str(signed.export), "--public-key", str(signed.public))
    assert (code, found) == (0, []), out
    assert f"signatures ({signed.key_id}): checkpoints signed up to log position" in out
    assert "and the export's signature line" in out
    code, found, out = verify(signed, "--db", "--public-key", str(signed.public))
    assert (code, found) == (0, []), out
    assert verify(signed, str(signed.export))[0] == 0  # a signed export still verifies without


def _rewrite_consistently(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Change a finished run's record and recompute every link that covers it (no key held)."""
    finished = records[index_of(records, "RUN_FINISHED")]
    finished["payload"]["duration_ms"] += 1000  # "the run was quick": nothing else disagrees
    relink(records, finished["stream"])
    head = max(
        (r for r in records if r["stream"] == finished["stream"]), key=lambda r: r["version"]
    )
    for checkpoint in (r for r in records if r["type"] == "CHECKPOINT_RECORDED"):
        if finished["stream"] in checkpoint["payload"]["links"]:
            checkpoint["payload"]["links"][finished["stream"]] = head["hash"]
    relink(records, records[index_of(records, "CHECKPOINT_RECORDED")]["stream"])
    return finished


def test_a_run_rewritten_and_relinked_is_caught_by_the_public_key_alone(
    signed: Signed, tmp_path: Path
) -> None:
    records = lines(signed.export)[:-1]  # the attacker cannot re-sign: the signature line goes
    _rewrite_consistently(records)
    forged = save(tmp_path / "forged.jsonl", records)
    assert verify(signed, str(forged))[0] == 0  # the limit of links anyone can recompute
    code, found, _ = verify(signed, str(forged), "--public-key", str(signed.public))
    assert code == 1
    checkpoint = records[index_of(records, "CHECKPOINT_RECORDED")]
    assert found[0] == (
        "[signature] the export has no signature line: it was not signed, or its end was cut off"
    )
    assert found[1].startswith(
        f"[signature] CHECKPOINT_RECORDED at position {checkpoint['position']}"
    )
    assert found[1].endswith(
        f"the checkpoint up to log position {checkpoint['payload']['upto']}: its signature does"
        f" not verify with key {signed.key_id}: what it signs was changed"
    )


def test_a_cut_tail_and_changed_lines_are_named_by_the_signature_line(
    signed: Signed, tmp_path: Path
) -> None:
    records = lines(signed.export)
    trailer, events = records[-1], records[:-1]
    cut = save(tmp_path / "cut.jsonl", [*events[:-3], trailer])
    code, found, _ = verify(signed, str(cut), "--public-key", str(signed.public))
    kept = events[-4]["position"]
    assert (code, found) == (
        1,
        [
            f"[signature] the export was cut short: it signs {len(events)} events up to log"
            f" position {events[-1]['position']}, and holds {len(events) - 3} up to {kept}"
        ],
    )
    events[0]["timestamp"] = events[0]["timestamp"].replace("20", "19", 1)
    changed = save(tmp_path / "changed.jsonl", [*events, trailer])
    found = verify(signed, str(changed), "--public-key", str(signed.public))[1]
    assert "[signature] the export's event lines are not the ones it signs: they were changed" in (
        found
    )
    trailer["signed"]["events"] -= 3  # a forged claim: the signature no longer covers it
    claimed = save(tmp_path / "claimed.jsonl", [*events[:-3], trailer])
    found = verify(signed, str(claimed), "--public-key", str(signed.public))[1]
    assert (
        "[signature] the export's signature line: its signature does not verify with key"
        in (found[0])
    )


def test_a_wrong_key_a_missing_signature_and_a_rotated_key_are_named(
    signed: Signed, tmp_path: Path
) -> None:
    _, other, other_id = keygen(tmp_path / "other", signed.outputs)
    code, found, _ = verify(signed, "--db", "--public-key", str(other))
    assert code == 1
    assert (
        f"it is signed with key '{signed.key_id}', not one of the keys given ({other_id})"
        in (found[0])
    )
    # a checkpoint recorded without the key: unsigned
    unsigned_env = {k: v for k, v in signed.env.items() if k != "HARNESS_AUDIT_SIGNING_KEY_FILE"}
    ran(signed.settings, ("limited_checks", "session-3"))
    recorded = run(unsigned_env, signed.outputs, "audit", "checkpoint")
    assert "recorded 1 checkpoint" in recorded.stdout
    found = verify(signed, "--db", "--public-key", str(signed.public))[1]
    assert len(found) == 1 and found[0].endswith("it carries no signature"), found
    # rotation: a second key signs from now on; both public keys verify the whole log
    rotated_private, rotated_public, _ = keygen(tmp_path / "rotated", signed.outputs)
    rotated = signed.env | {"HARNESS_AUDIT_SIGNING_KEY_FILE": str(rotated_private)}
    ran(signed.settings, ("conclusion_supported", "session-4"))
    run(rotated, signed.outputs, "audit", "checkpoint")
    both = ("--public-key", str(signed.public), "--public-key", str(rotated_public))
    found = verify(signed, "--db", *both)[1]
    assert len(found) == 1 and "it carries no signature" in found[0]  # only the unsigned one


def test_bad_keys_are_one_line_errors_and_the_private_key_never_shows(
    signed: Signed, tmp_path: Path
) -> None:
    outputs = signed.outputs
    as_public = run({}, outputs, "audit", "verify", "--db", "--public-key", str(signed.private))
    assert as_public.exit_code == 2 and "is a private key: give its public key" in as_public.stderr
    garbage = tmp_path / "garbage.pub"
    garbage.write_text("not a key")
    bad = run(signed.env, outputs, "audit", "verify", "--db", "--public-key", str(garbage))
    assert bad.exit_code == 2 and f"{garbage} holds no public key in PEM" in bad.stderr
    again = harness_cli({}, "audit", "keygen", "--out", str(signed.private.parent))
    assert again.exit_code == 2 and "exists: a key is never replaced" in again.stderr
    os.chmod(signed.private, 0o644)
    readable = run(signed.env, outputs, "audit", "checkpoint")
    assert readable.exit_code == 2
    assert f"may be read by other users (mode 0644): run `chmod 600 {signed.private}`" in (
        readable.stderr.replace("\n", " ")
    )
    os.chmod(signed.private, 0o600)
    assert (signed.private.stat().st_mode & 0o777) == 0o600
    secret = signed.private.read_text().splitlines()[1]  # the key's base64 body
    for said in [*outputs, signed.export.read_text()]:
        assert secret not in said and "PRIVATE KEY" not in said
    assert secret.encode() not in stored_bytes(signed.settings)


def stored_bytes(settings: Settings) -> bytes:
    """Everything the store holds: the SQLite file, or every table of the PostgreSQL schema."""
    if settings.database.kind == "sqlite":
        return Path(settings.database.path).read_bytes()
    schema = settings.database_schema
    with bootstrap(settings) as services, services.engine.connect() as connection:
        names = connection.execute(
            text("SELECT tablename FROM pg_tables WHERE schemaname = :schema"), {"schema": schema}
        ).scalars()
        dumped = [
            str(row).encode()
            for name in list(names)
            for row in connection.execute(text(f'SELECT * FROM "{schema}"."{name}"'))
        ]
    assert len(dumped) > 100, "the schema's tables were read"
    return b"\n".join(dumped)


def test_the_service_signs_the_checkpoints_it_records_by_itself(
    sqlite_settings: Settings, tmp_path: Path
) -> None:
    private, public, named = keygen(tmp_path / "keys", [])
    keyed = sqlite_settings.model_copy(update={"audit_signing_key_file": private})
    with bootstrap(keyed, create=True) as services:
        (checkpointer,) = [s.__self__ for s in services.store.after_save if hasattr(s, "__self__")]
        checkpointer.every = 20  # due after the first run, not after a thousand events
        run_scenario(services, "conclusion_supported", "session-1")
        recorded = [
            e
            for e in events_of(services.store, CHECKPOINTS_ID)
            if isinstance(e, AuditCheckpoint.CheckpointRecorded)
        ]
    assert recorded and all(e.signature and e.signature["key_id"] == named for e in recorded)
    env = env_of(keyed)
    result = harness_cli(env, "audit", "verify", "--db", "--public-key", str(public))
    assert [v for v in violations(result) if v.rule != "projection"] == [], result.stdout
    assert f"signatures ({named}): checkpoints signed up to log position" in result.stdout


def test_a_hostile_signature_line_is_named_never_raised(signed: Signed, tmp_path: Path) -> None:
    records = lines(signed.export)
    trailer, events = records[-1], records[:-1]
    cases: dict[str, tuple[list[dict[str, Any]], str]] = {
        "list": ([*events, {"signature": [], "signed": []}], "says nothing it signs"),
        "no-alg": (
            [*events, {"signature": {"value": "x"}, "signed": trailer["signed"]}],
            "its signature is not an ed25519 signature",
        ),
        "not-base64": (
            [*events, {"signature": trailer["signature"] | {"value": "%%"}, "signed": {}}],
            f"its signature does not verify with key {signed.key_id}",
        ),
    }
    for name, (written, message) in cases.items():
        code, found, _ = verify(
            signed, str(save(tmp_path / name, written)), "--public-key", str(signed.public)
        )
        assert code == 1 and any(message in line for line in found), (name, found)
    middle = save(tmp_path / "middle.jsonl", [*events[:3], trailer, *events[3:]])
    result = run(signed.env, signed.outputs, "audit", "verify", str(middle))
    assert result.exit_code == 2
    assert "line 5: a line after the export's signature line" in result.stderr.replace("\n", " ")
