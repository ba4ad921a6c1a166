"""Process proof: name a process of this machine so that another process can tell it died.

A name is ``boot/pidns/pid/start``: this machine's boot id, the pid namespace, the pid and the
process's start time. A process on the same machine and pid namespace can then prove it dead
(it no longer runs, or the pid now belongs to another process); from anywhere else nothing is
proved. Linux only: where /proc cannot tell, the name is '' and nothing is ever proved.
"""

from __future__ import annotations

import os


def process_identity(pid: int) -> str:
    """``boot/pidns/pid/start`` of a process of this machine ('' where /proc cannot tell)."""
    here, start = _machine(), _start_time(pid)
    if here is None or start is None:
        return ""
    return f"{here}/{pid}/{start}"


def proven_dead(process: str) -> bool:
    """Whether ``process`` is a process of this machine and pid namespace that no longer runs.

    False whenever it cannot be told (another machine or namespace, /proc hidden): only
    expiry then says a worker is gone.
    """
    parts = process.rsplit("/", 2)
    if len(parts) != 3 or parts[0] != _machine() or not parts[1].isdigit():
        return False
    pid = int(parts[1])
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the pid exists
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # it exists, owned by someone else
    stat = _stat(pid)
    if stat is None:
        return False
    state, start = stat
    return state in ("Z", "X") or start != parts[2]


def _machine() -> str | None:
    """This machine's boot id and this process's pid namespace (None off Linux)."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as boot:
            boot_id = boot.read().strip()
        namespace = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return None
    return f"{boot_id}/{namespace}"


def _stat(pid: int) -> tuple[str, str] | None:
    """A process's state letter and start time (clock ticks after boot) from /proc."""
    try:
        with open(f"/proc/{pid}/stat") as found:
            fields = found.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (fields[0], fields[19]) if len(fields) > 19 else None


def _start_time(pid: int) -> str | None:
    stat = _stat(pid)
    return stat[1] if stat else None
