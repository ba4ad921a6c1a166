"""``harness eval import-holmes``: HolmesGPT-format eval folders become valid cases of ours.

The folders under ``tests/evals/holmes`` are written for this project in HolmesGPT's format
(``test_case.yaml`` plus recorded ``*.txt`` tool outputs: JSON header, structured result, then
the output). The command runs in this process on a throwaway Typer group, as it will on
``harness eval``; the output is checked with the shared case format.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import typer
import yaml
from typer.testing import CliRunner, Result

from cli.eval_import import add_import_command
from tests.eval_case_shape import EvalCase, load_case_file
from tests.sample_corpus import sample_tool_lines

HOLMES = Path(__file__).resolve().parents[2] / "evals" / "holmes"
HEADER = {"toolset_name": "kubernetes/core", "tool_name": "kubectl_describe", "match_params": {}}
RESULT = {"schema_version": "robusta:v1.0.0", "status": "success", "error": None}


def _eval_group() -> typer.Typer:
    group = typer.Typer()

    @group.callback()
    def _eval() -> None:
        """Stands in for the ``harness eval`` group."""

    add_import_command(group)
    return group


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(_eval_group(), ["import-holmes", *map(str, args)])


def imported(tmp_path: Path, source: Path = HOLMES) -> dict[str, EvalCase]:
    dest = tmp_path / "out" / "holmes.yaml"
    done = run(source, dest)
    assert done.exit_code == 0, done.output
    return {case.id: case for case in load_case_file(dest)}


def refused(tmp_path: Path, source: Path) -> str:
    """The one error line of an import that must be refused; nothing is written."""
    dest = tmp_path / "refused.yaml"
    done = run(source, dest)
    assert done.exit_code == 2, done.output
    assert not dest.exists()
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert "Traceback" not in done.output
    return lines[0]


def one_case(tmp_path: Path, spec: object = None, **recordings: str) -> Path:
    """A HolmesGPT case folder with ``spec`` as test_case.yaml and the given recordings."""
    folder = tmp_path / "holmes" / "01_case"
    folder.mkdir(parents=True)
    spec = spec if spec is not None else {"user_prompt": "Why?", "expected_output": ["x"]}
    text = spec if isinstance(spec, str) else yaml.safe_dump(spec)
    (folder / "test_case.yaml").write_text(text, encoding="utf-8")
    for name, body in recordings.items():
        (folder / f"{name}.txt").write_text(body, encoding="utf-8")
    return folder


def recording(header: object = None, result: object = None, *output: str) -> str:
    first = json.dumps(HEADER if header is None else header)
    second = json.dumps(RESULT if result is None else result)
    return "\n".join([first, second, *output]) + "\n"


# -- the cases written in HolmesGPT's format -------------------------------------------------


def test_every_written_holmes_case_converts_into_a_valid_case(tmp_path: Path) -> None:
    cases = imported(tmp_path)
    assert sorted(cases) == [
        "holmes-checkout-latency-after-deploy",
        "holmes-k8s-crashloop-missing-env",
        "holmes-payments-pool-exhausted",
        "holmes-search-certificate-expired-0",
        "holmes-search-certificate-expired-1",
    ]
    for case in cases.values():
        assert case.fixture is not None and case.fixture.tools, case.id
        assert case.expect.outcome == "conclusion" and case.expect.must, case.id
        assert "holmes" in case.tags and "Apache-2.0" in (case.notes or "")


def test_each_recorded_output_is_a_result_matched_by_its_params(tmp_path: Path) -> None:
    case = imported(tmp_path)["holmes-checkout-latency-after-deploy"]
    assert case.fixture is not None
    tools = {tool.name: tool for tool in case.fixture.tools}
    assert sorted(tools) == ["list_alerts", "list_deployments", "query_metrics", "search_logs"]
    logs = tools["search_logs"]
    assert [r.match for r in logs.results] == [
        {"service": "checkout", "level": "ERROR"},
        {"service": "checkout", "level": "WARN"},
    ]
    recorded = HOLMES / "checkout_latency_after_deploy" / "search_logs_checkout_ERROR.txt"
    assert logs.results[0].lines == tuple(recorded.read_text(encoding="utf-8").splitlines()[2:])
    assert logs.parameters == {
        "type": "object",
        "properties": {"level": {"type": "string"}, "service": {"type": "string"}},
    }
    assert "harness/ops" in (logs.description or "")


def test_no_data_is_no_records_and_an_error_stays_a_tool_failure(tmp_path: Path) -> None:
    case = imported(tmp_path)["holmes-payments-pool-exhausted"]
    assert case.fixture is not None
    tools = {tool.name: tool for tool in case.fixture.tools}
    assert tools["list_deployments"].results[0].lines == ()
    failed = tools["query_metrics"].results[0]
    assert failed.error == "metrics backend unavailable: connection refused"
    assert failed.lines is None


def test_the_most_specific_recording_is_matched_first(tmp_path: Path) -> None:
    case = imported(tmp_path)["holmes-search-certificate-expired-0"]
    assert case.fixture is not None
    logs = next(tool for tool in case.fixture.tools if tool.name == "search_logs")
    assert [r.match for r in logs.results] == [
        {"service": "search", "level": "ERROR"},
        {"service": "search"},
    ]


def test_only_literal_facts_become_must_and_the_statements_stay_in_notes(tmp_path: Path) -> None:
    case = imported(tmp_path)["holmes-k8s-crashloop-missing-env"]
    assert case.expect.must == (
        "billing-worker-5c9d7b8f6-x2kqp",
        "CrashLoopBackOff",
        "BILLING_API_URL",
    )
    notes = case.notes or ""
    assert "Does not blame memory limits or OOM kills" in notes  # negated: never a must
    assert "Not checkable literally" in notes
    assert "Ignored (live set-up): after_test, before_test." in notes
    search = imported(tmp_path / "again")["holmes-search-certificate-expired-1"]
    assert "notAfter=2026-11-30T14:58:00Z" in search.expect.must
    assert "v3.8.2" not in search.expect.must  # "No deploy was involved; v3.8.2 is unrelated"


def test_each_prompt_of_a_list_is_a_case_and_the_rest_is_carried(tmp_path: Path) -> None:
    cases = imported(tmp_path)
    first, second = (cases[f"holmes-search-certificate-expired-{i}"] for i in (0, 1))
    assert first.question != second.question and first.fixture == second.fixture
    payments = cases["holmes-payments-pool-exhausted"]
    assert 'mocked_date: "2026-11-28T16:30:00Z"' in (payments.notes or "")
    assert "strict" in (payments.notes or "")  # evaluation kept for a reader


def test_a_txt_without_a_json_header_is_passed_over_and_unknown_header_keys_are_ignored(
    tmp_path: Path,
) -> None:
    case = imported(tmp_path)["holmes-k8s-crashloop-missing-env"]
    assert case.fixture is not None
    names = {tool.name for tool in case.fixture.tools}
    assert names == {"fetch_pod_logs", "kubectl_describe", "kubectl_find_resource"}
    # kubectl_describe.txt carries a header key of its own ("recorded_by"): allowed, unused
    assert "recorded_by" not in json.dumps([t.model_dump() for t in case.fixture.tools])


def test_one_folder_imports_alone(tmp_path: Path) -> None:
    cases = imported(tmp_path, HOLMES / "k8s_crashloop_missing_env")
    assert list(cases) == ["holmes-k8s-crashloop-missing-env"]


def test_a_case_without_a_checkable_fact_is_tagged_unchecked(tmp_path: Path) -> None:
    spec = {"user_prompt": "Is the nginx pod healthy?", "expected_output": "nginx pod is healthy"}
    folder = one_case(tmp_path, spec, kubectl_describe=recording(None, None, "Status: Running"))
    case = imported(tmp_path, folder.parent)["holmes-01-case"]
    assert case.expect.must == () and "unchecked" in case.tags


# -- what is refused, in one line naming the file and the field -------------------------------


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"expected_output": ["x"]}, "test_case.yaml: user_prompt: missing"),
        ({"user_prompt": "Why?"}, "test_case.yaml: expected_output: missing"),
        ({"user_prompt": ["Why?", 3], "expected_output": "x"}, "user_prompt: missing"),
        ({"user_prompt": "Why?", "expected_output": {"a": 1}}, "expected_output: missing"),
        ({"user_prompt": "Why?", "expected_output": "x", "colour": 1}, "colour: unknown field"),
        ({"user_prompt": "Why?", "expected_output": "x", "tags": "easy"}, "tags: not a list"),
        ({"user_prompt": "Why?", "expected_output": "x", "skip": "no"}, "skip: not a boolean"),
        (
            {"user_prompt": "Why?", "expected_output": "x", "mock_policy": "never_mock"},
            "never_mock",
        ),
        ({"user_prompt": "Why?", "expected_output": "x", "include_files": ["a"]}, "include_files"),
        ({"user_prompt": "Why?", "expected_output": "x", "conversation_history": []}, "turns"),
        ("user_prompt: [unclosed", "test_case.yaml: not YAML"),
        ("- a list", "test_case.yaml: not a mapping"),
    ],
)
def test_a_bad_test_case_is_refused(tmp_path: Path, spec: object, expected: str) -> None:
    line = refused(tmp_path, one_case(tmp_path, spec))
    assert expected in line and "01_case" in line


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('{"tool_name": "kubectl_describe"\n{}\n', "line 1: bad header (not JSON"),
        (json.dumps(HEADER) + "\n[1]\n", "line 2: bad structured result (not a JSON object)"),
        (recording({"toolset_name": "k"}), "line 1: tool_name: missing"),
        (recording({"tool_name": "t", "match_params": [1]}), "line 1: match_params: not an object"),
        (json.dumps(HEADER) + "\n", "line 2: missing"),
        (json.dumps(HEADER) + "\nold format: raw output\n", "line 2: bad structured result"),
        (recording(None, {"status": "fine"}), "line 2: status: 'fine'"),
    ],
)
def test_a_bad_recording_is_refused(tmp_path: Path, body: str, expected: str) -> None:
    line = refused(tmp_path, one_case(tmp_path, None, kubectl_describe=body))
    assert "kubectl_describe.txt" in line and expected in line


def test_a_recording_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    folder = one_case(tmp_path)
    (folder / "logs.txt").write_bytes(b'{"tool_name": "x"}\n\xff\xfe\n')
    assert "logs.txt: not UTF-8 text" in refused(tmp_path, folder)


def test_a_conversation_history_folder_is_refused(tmp_path: Path) -> None:
    folder = one_case(tmp_path)
    (folder / "conversation_history").mkdir()
    assert "conversation_history: earlier turns" in refused(tmp_path, folder)


def test_a_source_without_cases_and_folders_clashing_on_an_id_are_refused(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert "no test_case.yaml" in refused(tmp_path, tmp_path / "empty")
    assert "not a folder" in refused(tmp_path, tmp_path / "absent")
    clash = tmp_path / "clash"
    for name in ("a_b", "a-b"):
        shutil.copytree(HOLMES / "k8s_crashloop_missing_env", clash / name)
    assert "holmes-a-b: two folders give the same case id" in refused(tmp_path, clash)


def test_skipped_cases_are_left_out_and_said(tmp_path: Path) -> None:
    spec = {"user_prompt": "Why?", "expected_output": "x", "skip": True, "skip_reason": "flaky"}
    folder = one_case(tmp_path, spec)
    done = run(folder.parent, tmp_path / "out.yaml")
    assert done.exit_code == 2 and "skipped: 01_case: skip: true (flaky)" in done.stderr
    assert "no case to import" in done.stderr


def test_skip_invalid_imports_the_rest_and_lists_the_refused(tmp_path: Path) -> None:
    parent = tmp_path / "mixed"
    shutil.copytree(HOLMES / "k8s_crashloop_missing_env", parent / "good")
    (parent / "bad").mkdir()
    (parent / "bad" / "test_case.yaml").write_text("expected_output: x\n", encoding="utf-8")
    dest = tmp_path / "mixed.yaml"
    assert run(parent, dest).exit_code == 2 and not dest.exists()
    done = run(parent, dest, "--skip-invalid")
    assert done.exit_code == 0, done.output
    assert [case.id for case in load_case_file(dest)] == ["holmes-good"]
    assert "refused:" in done.stderr and "user_prompt: missing" in done.stderr
    assert "imported 1 cases" in done.stdout and "1 refused" in done.stdout


def test_dest_is_never_overwritten_without_force(tmp_path: Path) -> None:
    dest = tmp_path / "cases.yaml"
    dest.write_text("mine\n", encoding="utf-8")
    done = run(HOLMES, dest)
    assert done.exit_code == 2 and "exists; give --force" in done.stderr
    assert dest.read_text(encoding="utf-8") == "mine\n"
    assert run(HOLMES, dest, "--force").exit_code == 0
    assert len(load_case_file(dest)) == 5
    folder = run(HOLMES, tmp_path)
    assert folder.exit_code == 2 and "is a folder" in folder.stderr


def test_a_dest_that_cannot_be_written_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("", encoding="utf-8")
    done = run(HOLMES, tmp_path / "afile" / "cases.yaml")
    assert done.exit_code == 2 and "cannot write it" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.output


def test_the_recordings_over_the_sample_are_its_records(tmp_path: Path) -> None:
    """The cases written over the sample incidents quote its records, so they cannot drift."""
    records = set(sample_tool_lines(tmp_path / "ops.db"))
    quoted = [
        (path.name, line)
        for path in sorted(HOLMES.glob("*/*.txt"))
        if '"harness/ops"' in (text := path.read_text(encoding="utf-8")).splitlines()[0]
        for line in text.splitlines()[2:]
    ]
    assert len(quoted) > 40
    assert [item for item in quoted if item[1] not in records] == []


def test_a_folder_without_recordings_is_refused(tmp_path: Path) -> None:
    folder = one_case(tmp_path, None, notes="just notes, no JSON header\n")
    assert "01_case: no recorded tool output" in refused(tmp_path, folder)


def test_variants_are_written_out_in_full_without_yaml_aliases(tmp_path: Path) -> None:
    """Case files refuse YAML aliases (a few can expand a file to gigabytes): none is written."""
    dest = tmp_path / "holmes.yaml"
    assert run(HOLMES / "search_certificate_expired", dest).exit_code == 0
    events = list(yaml.parse(dest.read_text(encoding="utf-8")))
    assert not any(isinstance(event, yaml.AliasEvent) for event in events)
    first, second = load_case_file(dest)
    assert first.fixture == second.fixture and first.fixture is not None


def test_a_case_the_loader_would_refuse_is_not_written(tmp_path: Path) -> None:
    body = recording({**HEADER, "tool_name": "kubectl describe"}, None, "Status: Running")
    line = refused(tmp_path, one_case(tmp_path, None, kubectl_describe=body))
    assert "its case would be refused: fixture.tools.0.name" in line


def test_a_recording_that_cannot_be_read_is_one_line(tmp_path: Path) -> None:
    folder = one_case(tmp_path, None, kubectl_describe=recording(None, None, "ok"))
    (folder / "x.txt").mkdir()  # a folder where a recording would be
    assert "x.txt: cannot read it" in refused(tmp_path, folder)


def test_a_test_case_with_an_alias_is_refused(tmp_path: Path) -> None:
    spec = "user_prompt: &p Why?\nexpected_output: [*p]\n"
    folder = one_case(tmp_path, spec, kubectl_describe=recording(None, None, "ok"))
    assert "aliases are not accepted" in refused(tmp_path, folder)
