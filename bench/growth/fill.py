"""Growing the store with real runs, made by the served worker's own chat service."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from bench.growth import OWNERS, TURNS
from infrastructure.ops_data import sample_incidents

if TYPE_CHECKING:
    from application.chat import ChatService

GREETING = "hello"
RUNBOOK = "How do I roll back a deployment?"
MARK_EVERY = 100
"""Note the time before every this many runs (the time windows are cut at those)."""
PROGRESS_EVERY = 5_000


def questions() -> list[str]:
    """What the runs ask in turn: every sample incident, a greeting and a runbook question."""
    return [incident.question for incident in sample_incidents()] + [GREETING, RUNBOOK]


def memory_kb(field_name: str = "VmRSS") -> int:
    """This process's resident memory (``VmRSS``) or its peak (``VmHWM``), in kB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field_name}:"):
            return int(line.split()[1])
    return 0


@dataclass
class Filler:
    """Makes finished runs one after another and counts every run this process made."""

    service: ChatService
    made: int = 0
    seconds: float = 0.0
    oldest: str = ""
    marks: list[datetime] = field(default_factory=list)
    """The time before runs 0, 100, 200, ... (``marks[i]`` precedes run ``i * MARK_EVERY``)."""
    _asked: list[str] = field(default_factory=questions)

    def one(self, question: str | None = None) -> str:
        """Make one run (the next question in turn unless given); its id."""
        index = self.made
        if index % MARK_EVERY == 0:
            self.marks.append(datetime.now(UTC))
        owner = OWNERS[index % len(OWNERS)]
        session = f"{owner}-{index // (len(OWNERS) * TURNS)}"
        asked = question or self._asked[index % len(self._asked)]
        result = self.service.ask(session, asked, owner=owner)
        self.made += 1
        run_id = str(result.run_id)
        self.oldest = self.oldest or run_id
        return run_id

    def fill_to(self, total: int) -> float:
        """Make runs until this process has made ``total``; the seconds it took."""
        began = time.perf_counter()
        start = self.made
        while self.made < total:
            self.one()
            if self.made % PROGRESS_EVERY == 0:
                rate = (self.made - start) / (time.perf_counter() - began)
                print(f"    {self.made} runs ({rate:.0f} runs/s)", flush=True)
        took = time.perf_counter() - began
        self.seconds += took
        return took

    def window(self) -> tuple[datetime, datetime]:
        """The second quarter of the runs so far: from before run N/4 to before run N/2."""
        last = len(self.marks) - 1
        if last < 1:  # fewer than MARK_EVERY runs: all of them
            return self.marks[0], datetime.now(UTC)
        return self.marks[min(last, last // 4)], self.marks[max(1, last // 2)]
