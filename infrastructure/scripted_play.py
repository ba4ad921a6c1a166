"""What a scenario's scripted provider and scripted tools share: the play, the waits, the error.

The provider starts a new play with every run; the tools follow it, so each run plays the steps
and the tools' results from the first. Both wait the same ways a step or a result asks for.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import threading
    from collections.abc import Mapping


class ScenarioError(ValueError):
    """The scenario file is malformed; the message names the place."""


@dataclass
class Play:
    """Which run the scenario is playing: every run's ROUTE request starts the next play.

    A run always routes first, so each run of a process plays the steps and the tools' results
    from the first. Runs executing at the same time in one process share the one cursor: play
    a scenario with one run at a time.
    """

    number: int = 0


def hold(spec: Mapping[str, Any], hanging: threading.Event, released: threading.Event) -> None:
    """Wait as a step or a result says: ``hang: true`` until released, then ``delay`` seconds.

    ``hanging`` is set while a hang waits (lets a caller act while the port hangs); ``released``
    is set by the owner's ``release()`` (a port call that never answers on its own).
    """
    if spec.get("hang"):
        hanging.set()
        released.wait()
    if "delay" in spec:
        time.sleep(float(spec["delay"]))  # a scripted slow model or backend, part of the scenario
