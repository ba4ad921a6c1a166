"""Two heavy runs with the scripted model and tools: a 5 MB tool result, and 50 tool calls."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.growth.fill import memory_kb
from bootstrap.composition import Overrides, bootstrap
from bootstrap.run_config import chat_config
from infrastructure.model_scripted import ScriptedProvider
from infrastructure.scripted_tools import scripted_tools

if TYPE_CHECKING:
    from application.store import HarnessStore
    from infrastructure.settings import Settings

BIG_RESULT = 5_000_000
"""Bytes one tool call returns (lines of 99 characters)."""
MANY_CALLS = 50
LINE = "2026-11-29T10:{:02d}:{:02d}Z checkout ERROR upstream timeout after 30s (call {})"
QUESTION = "why is checkout slow?"


def big_result() -> dict[str, Any]:
    """One call whose result is 5 MB; the boundary keeps 8000 bytes of it and says so."""
    return {
        "route": "DIAGNOSIS",
        "tools": {"search_logs": {"size": BIG_RESULT}},
        "steps": [
            {"tool": "search_logs", "arguments": {"service": "checkout"}},
            {  # an honest draft: nothing proven, what is missing named
                "progress": {"gain": "NO_GAIN", "facts": []},
                "draft": {
                    "conclusion": None,
                    "facts": [],
                    "missing_info": [{"kind": "TIME_WINDOW"}],
                },
            },
        ],
    }


def many_calls() -> dict[str, Any]:
    """50 calls of one tool, each result new, each step a gain citing the previous result."""
    lines = [LINE.format(k // 60, k % 60, k) for k in range(MANY_CALLS)]
    steps: list[dict[str, Any]] = [{"tool": "search_logs", "arguments": {"page": 0}}]
    for k in range(1, MANY_CALLS + 1):
        fact = {"statement": f"call {k - 1} saw a timeout", "citations": [_cite(k, lines[k - 1])]}
        step: dict[str, Any] = {"progress": {"gain": "GAINED", "facts": [fact]}}
        if k < MANY_CALLS:
            step |= {"tool": "search_logs", "arguments": {"page": k}}
        steps.append(step)
    steps.append({"draft": {"conclusion": None, "facts": [], "missing_info": []}})
    calls = MANY_CALLS + 5
    return {
        "route": "DIAGNOSIS",
        "budget": {"tool_calls": calls, "model_calls": 2 * calls, "tokens": 10**7},
        "deadline_s": 600,
        "tools": {"search_logs": {"results": [{"lines": [line]} for line in lines]}},
        "steps": steps,
    }


def _cite(k: int, line: str) -> dict[str, str]:
    return {"reference": f"${k}", "excerpt": line[line.index("upstream") :]}


@dataclass(frozen=True)
class Heavy:
    """One heavy run: how it ended, its seconds, and what it did to memory (kB)."""

    name: str
    outcome: str
    tool_calls: int
    seconds: float
    rss_kb: int
    peak_rise_kb: int


def reset_peak() -> bool:
    """Reset this process's peak RSS (``VmHWM``) to its current RSS; whether Linux allowed it."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def heavy_run(
    settings: Settings, store: HarnessStore, name: str, scenario: dict[str, Any]
) -> Heavy:
    """Play ``scenario`` once on ``store`` through the composition root; time and memory."""
    provider = ScriptedProvider(scenario)
    overrides = Overrides(
        store=store,
        provider=provider,
        tools=scripted_tools(provider.scenario, provider.play),
        config=chat_config(provider.scenario),
        heartbeat=False,
    )
    with bootstrap(settings, overrides=overrides) as built:
        before = memory_kb()
        reset_peak()
        began = time.perf_counter()
        result = built.chat.ask(f"heavy-{name}", QUESTION)
        seconds = time.perf_counter() - began
        peak, after = memory_kb("VmHWM"), memory_kb()
        run = store.get_run(result.run_id)
        built.chat.pool.shutdown(wait=True)
    outcome = f"{result.termination.state.value}/{result.release_outcome.value}"
    return Heavy(name, outcome, run.usage.tool_calls, seconds, after, max(0, peak - before))


def heavy_runs(settings: Settings, store: HarnessStore) -> list[Heavy]:
    """The 5 MB result and the 50 calls, one run each."""
    return [
        heavy_run(settings, store, "5MB result", big_result()),
        heavy_run(settings, store, f"{MANY_CALLS} tool calls", many_calls()),
    ]
