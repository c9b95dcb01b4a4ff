"""A warm parent for the test MCP servers: each starts in milliseconds, not in seconds.

Importing the MCP SDK costs a test server about 1.5 s of CPU (5 s and more of wall time on
a loaded machine), and the suite starts dozens of them. The zygote (one per test process,
started at the first `stdio_entry`) imports the SDK and tests/mcp_servers.py once; each
server the app starts is then `python -I -S mcp_zygote.py launch SOCKET MODE...`, a launcher
of the standard library only: it hands the zygote its stdin, stdout and stderr, its
environment and folder (SCM_RIGHTS over a Unix socket), the zygote forks a server onto those
descriptors, and the launcher exits with the server's status. The app still talks to a real
server over its own pipes. A server dies with its launcher (a pidfd watch), so the app's
kill of the launcher's group ends it as before; the tests about process trees (the `orphan`
mode) and the light modes start their servers directly.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

SCRIPT = str(Path(__file__).resolve())
_MAX_MESSAGE = 1 << 20
_zygote: tuple[subprocess.Popen[bytes], str] | None = None


def launcher_args(mode_args: list[str]) -> list[str] | None:
    """The `args` of a command (run by sys.executable) that starts a server in the zygote,
    or None where there is no zygote (no pidfd, or it could not start): start it directly."""
    global _zygote
    if not hasattr(os, "pidfd_open") or not hasattr(socket, "send_fds"):
        return None
    if _zygote is None or _zygote[0].poll() is not None:
        folder = tempfile.mkdtemp(prefix="mcp-zygote-")
        path = os.path.join(folder, "socket")
        process = subprocess.Popen(
            [sys.executable, SCRIPT, "serve", path, str(os.getpid())],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            start_new_session=True,
        )
        assert process.stdout is not None
        # The zygote says "ready" once it listens (the import is its whole start-up).
        if process.stdout.readline().strip() != b"ready":
            _stop(process, folder)
            return None
        _zygote = (process, path)
        atexit.register(_stop, process, folder)
    return ["-I", "-S", SCRIPT, "launch", _zygote[1], *mode_args]


def _stop(process: subprocess.Popen[bytes], folder: str) -> None:
    if process.poll() is None:
        process.kill()
        process.wait(10)
    shutil.rmtree(folder, ignore_errors=True)


def _launch(path: str, mode_args: list[str]) -> None:
    """The launcher: hand this process's stdio to the zygote, exit with the server's status."""
    payload = json.dumps(
        {"args": mode_args, "env": dict(os.environ), "cwd": os.getcwd(), "pid": os.getpid()}
    ).encode()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(path)
        socket.send_fds(sock, [payload], [0, 1, 2])
        # Only the server holds the app's pipes now: their ends are its ends (EOF included).
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        answer = b""
        while chunk := sock.recv(64):
            answer += chunk
    code = int(answer) if answer.strip().lstrip(b"-").isdigit() else 1
    if code < 0:  # the server was killed by a signal: so is its launcher, as the app expects
        import signal as signals

        signals.signal(-code, signals.SIG_DFL)
        os.kill(os.getpid(), -code)
    os._exit(code)


def _serve(path: str, parent: int) -> None:
    """The zygote: import the servers once, then fork one per launcher that connects."""
    import mcp_servers

    mcp_servers._server("normal")  # the first build warms what building one imports
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    parent_fd = os.pidfd_open(parent)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    children: dict[int, socket.socket] = {}
    while True:
        ready, _, _ = select.select([listener, wake_read, parent_fd], [], [])
        if parent_fd in ready:  # the test process is gone: so are its servers' launchers
            os._exit(0)
        if wake_read in ready:
            with contextlib.suppress(BlockingIOError, InterruptedError):
                os.read(wake_read, 4096)
            _reap(children)
        if listener in ready:
            conn, _ = listener.accept()
            message, fds, _, _ = socket.recv_fds(conn, _MAX_MESSAGE, 3)
            pid = os.fork()
            if pid == 0:
                listener.close()
                for fd in (wake_read, wake_write, parent_fd):
                    os.close(fd)
                for other in children.values():
                    other.close()
                conn.close()
                _child(json.loads(message), fds, mcp_servers)
            for fd in fds:
                os.close(fd)
            children[pid] = conn
            _reap(children)


def _reap(children: dict[int, socket.socket]) -> None:
    for pid in list(children):
        with contextlib.suppress(ChildProcessError):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                conn = children.pop(pid)
                with contextlib.suppress(OSError):
                    conn.sendall(str(os.waitstatus_to_exitcode(status)).encode())
                conn.close()


def _child(request: dict, fds: list[int], mcp_servers) -> None:
    """The forked server: the launcher's stdio, environment and folder, then its mode."""
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    code = 1
    try:
        os.setsid()
        for target, fd in zip((0, 1, 2), fds, strict=True):
            os.dup2(fd, target)
            os.close(fd)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        sys.argv = [mcp_servers.SCRIPT, *request["args"]]
        mcp_servers._STDOUT = os.fstat(1)
        _die_with(request["pid"])
        mcp_servers.main(request["args"])
        code = 0
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def _die_with(launcher: int) -> None:
    """End this server when its launcher ends (as a killed server's process would)."""
    try:
        watched = os.pidfd_open(launcher)
    except ProcessLookupError:
        os._exit(1)

    def watch() -> None:
        select.select([watched], [], [])
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, daemon=True).start()


if __name__ == "__main__":
    if sys.argv[1] == "launch":
        _launch(sys.argv[2], sys.argv[3:])
    else:
        sys.path.insert(0, os.path.dirname(SCRIPT))
        _serve(sys.argv[2], int(sys.argv[3]))
