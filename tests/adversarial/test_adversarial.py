"""Adversarial models: every scenario file here states an attack and the outcome it must get.

Each scenario is played on an SQLite file and on PostgreSQL by the scripted provider, as a
hostile or confused model would answer. A scenario may ask its own ``question`` and give the
runbook ``passages`` a knowledge answer is retrieved from. Besides its own expectations
(release outcome, the citation problems the EvidenceGuard names, text that must or must not be
published), every run
must keep the invariants of the log (design §16) and the grounding rules (design §10.1): each
published statement is proven by citations in the log and, after a conclusion, was judged.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from application.audit.records import store_records
from application.audit.verify import verify_records
from application.ports import Passage
from bootstrap.composition import Services
from domain.run import Run
from infrastructure.model_scripted import load_scenario
from projections.sse_feed import run_feed
from tests.helpers import FixedPassages, ask_scripted
from tests.integration._invariants import check_run, read_events

HERE = Path(__file__).parent
SCENARIOS = sorted(HERE.glob("*.yaml"))
QUESTION = "Why was checkout slow on 2026-11-29 between 10:00 and 12:00 UTC?"


def test_there_are_at_least_thirty_attacks_each_stating_itself() -> None:
    assert len(SCENARIOS) >= 30
    for path in SCENARIOS:
        first = path.read_text(encoding="utf-8").splitlines()[0]
        assert first.startswith("# Attack: "), path.name
        assert "expect" in load_scenario(path), path.name


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_the_attack_is_contained(path: Path, services: Services) -> None:
    store = services.store
    scenario = load_scenario(path)
    expect: dict[str, Any] = scenario.pop("expect")
    question = str(scenario.pop("question", QUESTION))
    passages = [Passage(p["id"], p["title"], p["text"], 1.0) for p in scenario.pop("passages", [])]
    knowledge = FixedPassages(passages) if passages else None
    result = ask_scripted(services, scenario, "adversary", question, knowledge=knowledge)
    events = read_events(store)
    check_run(result, events)
    report = verify_records(store_records(store), None, run_feed)  # the offline verifier agrees
    assert report.clean, [v.describe() for v in report.violations]

    assert result.release_outcome.value == expect["release"], result
    if "state" in expect:
        assert result.termination.state.value == expect["state"]
    if "fallback" in expect:
        assert result.content is not None
        assert result.content["fallback_type"] == expect["fallback"]
    named = {
        r.problem.value
        for e in events
        if isinstance(e, (Run.EvidenceGuardInitial, Run.EvidenceGuardRecheck))
        for r in e.rejected
    }
    assert set(expect.get("rejects", [])) <= named, named
    published = json.dumps(result.content or {}, ensure_ascii=False).casefold()
    for text in expect.get("absent", []):
        assert str(text).casefold() not in published, (text, result.content)
    for text in expect.get("present", []):
        assert str(text).casefold() in published, (text, result.content)
