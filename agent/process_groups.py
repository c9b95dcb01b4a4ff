"""Process groups by their id: who is in one, whether it lives, and ending it (SIGTERM, then
SIGKILL for whatever outlives a grace), for run_shell and its background processes."""

from __future__ import annotations

import os
import signal
import subprocess
import time


def members(pgid: int) -> list[int]:
    """The live (non-zombie) processes of process group `pgid`, by /proc ([] without it)."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    found = []
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[-1].split()
        except OSError:
            continue
        # After the command name: state, ppid, pgrp.
        if len(fields) > 2 and fields[2] == str(pgid).encode() and fields[0] != b"Z":
            found.append(int(name))
    return found


def group_alive(pgid: int) -> bool:
    """True while a process of group `pgid` runs (zombies waiting to be reaped do not count)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    if not os.path.isdir("/proc"):
        return True
    # killpg() also reaches zombies; /proc tells them apart.
    return bool(members(pgid))


def signal_group(pgid: int, sig: int) -> None:
    """Send `sig` to group `pgid`; a group already gone is no error."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def kill_groups(
    pgids: list[int], grace: float, reap: subprocess.Popen[bytes] | None = None
) -> list[int]:
    """SIGTERM the groups, then SIGKILL those with a member left after `grace` seconds;
    returns the groups that needed the SIGKILL. `reap` is polled meanwhile (a dead shell not
    yet reaped must not count as a live member)."""
    for pgid in pgids:
        signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    left = list(pgids)
    while True:
        if reap is not None:
            reap.poll()
        left = [pgid for pgid in left if group_alive(pgid)]
        if not left or time.monotonic() >= deadline:
            break
        time.sleep(0.01)
    for pgid in left:
        signal_group(pgid, signal.SIGKILL)
    return left
