"""The TCP ports a process group listens on, read from /proc (Linux; elsewhere none).

Each member's open sockets (`/proc/PID/fd` -> `socket:[inode]`) are matched against the
listening sockets of the member's own network namespace (`/proc/PID/net/tcp` and `tcp6`):
a sandboxed command without the network has a loopback of its own, and its sockets are
listed there, not in the host's tables.
"""

from __future__ import annotations

import os

from agent.process_groups import members

LISTEN = "0A"
"""The state column of a listening socket in /proc/net/tcp."""


def _socket_inodes(pid: int) -> set[str]:
    """The inodes of the sockets `pid` holds open."""
    inodes: set[str] = set()
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return inodes
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    return inodes


def _listening(pid: int) -> dict[str, int]:
    """Listening socket inode -> port, in the network namespace of `pid`."""
    found: dict[str, int] = {}
    for table in ("tcp", "tcp6"):
        try:
            with open(f"/proc/{pid}/net/{table}", encoding="ascii", errors="replace") as lines:
                next(lines, None)  # the header
                for line in lines:
                    fields = line.split()
                    if len(fields) > 9 and fields[3] == LISTEN:
                        found[fields[9]] = int(fields[1].rsplit(":", 1)[1], 16)
        except (OSError, ValueError, IndexError):
            continue
    return found


def listening_ports(pgid: int) -> list[int]:
    """The TCP ports the members of process group `pgid` listen on, sorted."""
    ports: set[int] = set()
    tables: dict[int, dict[str, int]] = {}  # one read per network namespace
    for pid in members(pgid):
        inodes = _socket_inodes(pid)
        if not inodes:
            continue
        try:
            namespace = os.stat(f"/proc/{pid}/ns/net").st_ino
        except OSError:
            continue
        if namespace not in tables:
            tables[namespace] = _listening(pid)
        ports.update(port for inode, port in tables[namespace].items() if inode in inodes)
    return sorted(ports)
