"""A client generated from ``/openapi.json`` by ``openapi-python-client`` works against the service.

The document is read from the running service, the generator runs as a user runs it, and the
generated package starts a run, lists it, reads its stream (the raw event stream: each event
checked against the item schema the document gives its name) and gets a problem for a run
that does not exist, over real HTTP with an API key. The generator lives in ``.venv/tools``
(``scripts/test`` installs it: it pins typer and httpx below the project's versions); the
generated package needs only httpx and attrs, which the project's environment has.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import jsonschema
import pytest

from infrastructure.api_keys import ApiKey
from infrastructure.settings import Settings
from tests.api._serve import served_client

KEY = "generated-client-key-0123456789"
QUESTION = "Why was checkout slow on 2026-11-29 between 10:00 and 12:00 UTC?"
PACKAGE = "harness_api_client"


TOOLS = Path(sys.executable).parents[1] / "tools" / "bin"
"""Where ``scripts/test`` installs the generator (``.venv/tools``)."""


def _generate(document: dict[str, Any], folder: Path) -> None:
    source = folder / "openapi.json"
    source.write_text(json.dumps(document))
    generator = TOOLS / "openapi-python-client"
    if not generator.exists():
        pytest.fail(f"{generator} is missing: run scripts/test (it installs the generator)")
    env = os.environ | {"PATH": f"{TOOLS}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(
        [str(generator), "generate", "--path", str(source), "--meta", "none",
         "--output-path", str(folder / PACKAGE)],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Warning" not in done.stdout + done.stderr, done.stdout + done.stderr


@pytest.fixture
def generated(tmp_path: Path) -> Iterator[tuple[Any, dict[str, Any], ModuleType]]:
    """The served app, its OpenAPI document, and the package generated from it."""
    keys = [ApiKey.model_validate({"key": KEY, "name": "ann", "role": "user"})]
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'harness.db'}", api_keys=keys)
    with served_client(settings, headers={"Authorization": f"Bearer {KEY}"}) as served:
        document = served.client.get("/openapi.json").json()
        _generate(document, tmp_path)
        sys.path.insert(0, str(tmp_path))
        try:
            yield served, document, importlib.import_module(PACKAGE)
        finally:
            sys.path.remove(str(tmp_path))
            for name in [n for n in sys.modules if n.split(".")[0] == PACKAGE]:
                del sys.modules[name]


def _events(text: str) -> list[dict[str, str]]:
    """The events of a WHATWG event stream (comments left out)."""
    found = []
    for block in text.split("\n\n"):
        fields = dict(
            line.split(": ", 1) for line in block.splitlines() if line and not line.startswith(":")
        )
        if fields:
            found.append(fields)
    return found


def test_the_generated_client_starts_lists_streams_and_reads_problems(
    generated: tuple[Any, dict[str, Any], ModuleType],
) -> None:
    served, document, package = generated
    create_run = importlib.import_module(f"{PACKAGE}.api.runs.create_run")
    list_runs = importlib.import_module(f"{PACKAGE}.api.runs.list_runs")
    stream_run = importlib.import_module(f"{PACKAGE}.api.runs.stream_run")
    get_run = importlib.import_module(f"{PACKAGE}.api.runs.get_run")
    models = importlib.import_module(f"{PACKAGE}.models")
    base = str(served.client.base_url)
    with package.AuthenticatedClient(base_url=base, token=KEY) as client:
        run_id = _a_run(client, document, models, create_run, stream_run)
        listed = list_runs.sync(client=client)
        assert isinstance(listed, models.RunsPublic), listed
        assert [str(run.run_id) for run in listed.data] == [run_id]
        assert listed.data[0].release_outcome == models.ReleaseOutcome.SUCCESS
        missing = get_run.sync(client=client, run_id="00000000-0000-4000-8000-000000000000")
        assert isinstance(missing, models.ProblemPublic), missing
        assert (missing.status, missing.title, missing.type_) == (404, "Not Found", "about:blank")
        assert "no run" in missing.detail
    with package.Client(base_url=base) as anonymous:
        refused = list_runs.sync_detailed(client=anonymous)
        assert refused.status_code == 401 and isinstance(refused.parsed, models.ProblemPublic)


def _a_run(client: Any, document: dict[str, Any], models: Any, create_run: Any, stream: Any) -> str:
    """Start a run, read its stream to the end, check each event; the run's id."""
    created = create_run.sync(client=client, body=models.ChatCreate(query=QUESTION))
    assert isinstance(created, models.RunCreated), created
    run_id = str(created.run_id)

    streamed = stream.sync_detailed(client=client, run_id=created.run_id)
    assert streamed.status_code == 200
    events = _events(streamed.content.decode())
    assert [e["event"] for e in events][0] == "metadata"
    assert [e["event"] for e in events][-2:] == ["content", "done"]
    schema = document["paths"]["/v1/runs/{run_id}/stream"]["get"]["responses"]["200"]
    items = schema["content"]["text/event-stream"]["itemSchema"]["oneOf"]
    by_name = {item["properties"]["event"]["const"]: item for item in items}
    for event in events:  # each event as the item schema of its name says
        item = by_name[event["event"]]
        jsonschema.validate(event, item)
        data = json.loads(event["data"])
        jsonschema.validate(data, item["properties"]["data"]["contentSchema"])
        assert data["run_id"] == run_id
    return run_id
