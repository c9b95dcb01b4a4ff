"""The keeper of one stdio MCP server: a tiny parent that ends the server's whole tree (H10).

A server is killed by its process group, but a child it starts with `setsid` (or that
changes its own group) leaves the group and outlives the app. The keeper is started in the
server's place (`python -I keeper.py PARENT COMMAND ARGS...`, standard library only), marks
itself a child subreaper (Linux `PR_SET_CHILD_SUBREAPER`: every orphan below it becomes its
child instead of init's), starts the server in its own process group (the one the app
signals), and reaps every child.
When the server exits, when the keeper is told to stop (SIGTERM, SIGINT, SIGHUP) or when the
app dies (`PR_SET_PDEATHSIG`), it kills everything below it, reaps it, and exits with the
server's status.

Why a keeper and not the app itself as the subreaper: the app's own children (run_shell,
git, Python's subprocess and asyncio's child watchers) must keep their exit statuses, which
a subreaper reaping orphans with `waitpid(-1)` could steal; and a keeper needs no privilege,
unlike a pid namespace (user namespaces are often off) or a cgroup (needs a delegated tree).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
KILL_ROUNDS = 20
"""Rounds of "kill every descendant" before giving up (a fork bomb cannot keep us here)."""


class _Stop(Exception):
    """The keeper was told to stop (or the app died)."""


def _prctl(option: int, value: int) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        status: int = libc.prctl(option, value, 0, 0, 0)  # ctypes: an int return
        return status == 0
    except (OSError, AttributeError):
        return False


def descendants(root: int) -> list[int]:
    """Every live process below `root`, from /proc (its children, theirs, and so on)."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1 and fields[0] != b"Z":
            children.setdefault(int(fields[1]), []).append(int(name))
    found: list[int] = []
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


def _reap() -> list[tuple[int, int]]:
    """Reap every child that has exited: [(pid, status)]."""
    reaped: list[tuple[int, int]] = []
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return reaped
        if pid == 0:
            return reaped
        reaped.append((pid, status))


def end_tree(me: int) -> None:
    """SIGKILL every descendant of `me` and reap them, round after round until none is left."""
    for _ in range(KILL_ROUNDS):
        found = descendants(me)
        if not found:
            break
        for pid in found:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)  # the kernel delivers the kills; the next round sees what is left
        _reap()
    _reap()


def _exit_code(status: int) -> int:
    if os.WIFEXITED(status):
        return os.WEXITSTATUS(status)
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return 1


def main(argv: list[str]) -> int:
    """Run `argv[1:]` under the keeper; `argv[0]` is the app's pid."""
    parent, command = int(argv[0]), argv[1:]
    me = os.getpid()
    stops = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)

    def stop(_signum: int, _frame: object) -> None:
        raise _Stop

    code = 128 + signal.SIGTERM
    try:
        for sig in stops:
            signal.signal(sig, stop)
        _prctl(PR_SET_CHILD_SUBREAPER, 1)
        _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # the app died before the death signal was armed
            return 1
        server = os.fork()
        if server == 0:
            _exec_server(command, stops)
        # The server holds the pipes now: ours would keep its stdout open after it exits.
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        while True:
            pid, status = os.waitpid(-1, 0)  # the server, or an orphan that ended
            if pid == server:
                code = _exit_code(status)
                break
    except (_Stop, ChildProcessError):
        if os.getpid() != me:  # the server, told to stop before it could exec
            os._exit(128 + signal.SIGTERM)
    for sig in stops:
        signal.signal(sig, signal.SIG_IGN)  # the cleanup below must not be cut short
    end_tree(me)
    return code


def _exec_server(command: list[str], stops: tuple[signal.Signals, ...]) -> None:
    """In the forked child: become the server (never returns)."""
    for sig in stops:
        signal.signal(sig, signal.SIG_DFL)
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        os.write(2, f"cannot start {command[0]}: {exc.strerror}\n".encode())
    os._exit(127)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
