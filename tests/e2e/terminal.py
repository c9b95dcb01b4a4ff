"""The installed app in a real terminal: a private tmux server and a scripted model process.

`ModelServer` runs `hermes-tui scripted-server` in its own process (nothing in the test process
can touch its sockets) and opens its gates over HTTP. `Terminal` is a private tmux server (its
own socket and config) that runs the installed `hermes-tui` in a 120x36 pane, types into it
and reads the pane back; waits poll the pane through tests/waits.py. The app's stderr is never
redirected: Textual draws on it. The fixtures end both in their teardown, even on failure.
"""

from __future__ import annotations

import http.client
import json
import os
import select
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml
from ui.tui_helpers import write_config
from waits import wait_until

SIZE = (120, 36)
"""The terminal every end-to-end test runs in (columns, lines)."""
POLL_SECONDS = 0.05
"""How often a wait reads the pane again (each read runs `tmux capture-pane`)."""

needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def hermes_tui() -> str:
    """The installed console script: the one next to this interpreter, else the one on PATH."""
    installed = Path(sys.executable).with_name("hermes-tui")
    return str(installed) if installed.exists() else shutil.which("hermes-tui") or "hermes-tui"


class ModelServer:
    """`hermes-tui scripted-server --script FILE --port 0` in its own process."""

    def __init__(self, script: dict[str, Any], folder: Path) -> None:
        path = folder / f"script-{uuid.uuid4().hex[:8]}.yaml"
        path.write_text(yaml.safe_dump(script), encoding="utf-8")
        self.proc = subprocess.Popen(
            [hermes_tui(), "scripted-server", "--script", str(path), "--port", "0"],
            stdout=subprocess.PIPE,
            text=True,
        )
        ready, _, _ = select.select([self.proc.stdout], [], [], 30)
        line = self.proc.stdout.readline() if ready else ""
        if "listening on" not in line:  # "scripted server listening on http://HOST:PORT"
            self.stop()
            raise AssertionError(f"the scripted server did not start within 30 s: {line!r}")
        self.url = line.rsplit(" ", 1)[-1].strip()
        self.openai_base_url = self.url + "/v1"

    def open_gate(self, name: str) -> None:
        """Release the replies held at gate `name`."""
        host, port = self.url.removeprefix("http://").rsplit(":", 1)
        conn = http.client.HTTPConnection(host, int(port), timeout=10)
        try:
            conn.request("POST", f"/_control/open_gate/{name}")
            assert conn.getresponse().status == 200
        finally:
            conn.close()

    def request_bodies(self) -> list[Any]:
        """The bodies of the model requests the server got so far, in order."""
        host, port = self.url.removeprefix("http://").rsplit(":", 1)
        conn = http.client.HTTPConnection(host, int(port), timeout=10)
        try:
            conn.request("GET", "/_control/requests")
            return json.loads(conn.getresponse().read())["requests"]
        finally:
            conn.close()

    def stop(self) -> None:
        """End the server process."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


class Terminal:
    """A private tmux server running the installed app in one pane, killed at the end."""

    TARGET = "app"

    def __init__(self, folder: Path, env: dict[str, str], options: Sequence[str] = ()) -> None:
        self.socket = f"hermes-e2e-{uuid.uuid4().hex[:12]}"
        self.config = folder / "tmux.conf"
        # A dead pane stays on screen, so a crash can be read and its exit status checked.
        self.config.write_text("\n".join(["set -g remain-on-exit on", *options]) + "\n")
        self.env = env
        self.exit_status = folder / "app-exit-status"

    def tmux(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run one tmux command against this private server."""
        done = subprocess.run(
            ["tmux", "-L", self.socket, "-f", str(self.config), *args],
            capture_output=True,
            text=True,
            timeout=10,
            env=_server_env(),
        )
        if check and done.returncode != 0:
            raise AssertionError(f"tmux {args[0]} failed ({done.returncode}): {done.stderr}")
        return done

    def start_app(self, cwd: Path, args: Sequence[str] = ()) -> None:
        """Start `hermes-tui` (with `args`) in the pane: a new one, or the old one again once
        the app quit."""
        env = [arg for name, value in self.env.items() for arg in ("-e", f"{name}={value}")]
        self.exit_status.unlink(missing_ok=True)
        # tmux does not always reap a pane's process (it then never learns the exit status),
        # so a shell around the app writes the status down. The app keeps the terminal.
        script = 'app="$1" status="$2"; shift 2; "$app" "$@"; echo "$?" > "$status"'
        command = ["sh", "-c", script, "hermes-tui", hermes_tui(), str(self.exit_status),
                   *args]  # fmt: skip
        if self.tmux("has-session", "-t", self.TARGET, check=False).returncode == 0:
            # The dead pane (remain-on-exit) is reused: killing the last session would end
            # the server, and a new one could race the old one's exit for the socket.
            self.tmux("respawn-pane", "-k", "-t", self.TARGET, "-c", str(cwd), *env, *command)
            return
        columns, lines = SIZE
        self.tmux("new-session", "-d", "-s", self.TARGET, "-x", str(columns), "-y", str(lines),
                  "-c", str(cwd), *env, *command)  # fmt: skip

    def send(self, *keys: str) -> None:
        """Type: text as it is, tmux key names (Enter, Escape, C-q) as keys."""
        self.tmux("send-keys", "-t", self.TARGET, *keys)

    def screen(self) -> str:
        """The pane's text as it is now."""
        return self.tmux("capture-pane", "-p", "-t", self.TARGET).stdout

    def show(self, key: str) -> str:
        """A tmux format of the pane, e.g. `#{pane_title}`."""
        return self.tmux("display", "-p", "-t", self.TARGET, key).stdout

    def wait_for(self, *texts: str, timeout: float = 30) -> str:
        """Wait until the pane shows every one of `texts`; return the screen."""
        return wait_until(
            lambda: (screen := self.screen()) and all(t in screen for t in texts) and screen,
            timeout=timeout,
            interval=POLL_SECONDS,
            what=lambda: f"{texts} on the screen; the pane shows:\n{self.screen()}",
        )

    def wait_until_gone(self, text: str, timeout: float = 30) -> str:
        """Wait until the pane no longer shows `text`; return the screen."""
        return wait_until(
            lambda: text not in (screen := self.screen()) and screen,
            timeout=timeout,
            interval=POLL_SECONDS,
            what=lambda: f"{text!r} to leave the screen; the pane shows:\n{self.screen()}",
        )

    def wait_for_exit(self, timeout: float = 30) -> int:
        """Wait until the app has exited; return its exit status."""
        status = wait_until(
            lambda: self.exit_status.exists() and self.exit_status.read_text().strip(),
            timeout=timeout,
            interval=POLL_SECONDS,
            what=lambda: f"the app to exit; the pane shows:\n{self.screen()}",
        )
        return int(status)

    def kill(self) -> None:
        """Stop the tmux server (and the app in it) and remove its socket file."""
        found = self.tmux("display", "-p", "#{socket_path}", check=False).stdout.strip()
        self.tmux("kill-server", check=False)
        if found:
            Path(found).unlink(missing_ok=True)


def _server_env() -> dict[str, str]:
    """The environment the tmux server (and so the app) inherits: this one, minus what would
    fix the app's size or mode (the test run sets COLUMNS=80 and LINES=24, for one)."""
    return {
        name: value
        for name, value in os.environ.items()
        if name not in ("COLUMNS", "LINES", "TMUX") and not name.startswith("TEXTUAL")
    }


def app_env(home: Path, tmp_path: Path) -> dict[str, str]:
    """The app's environment: an isolated HERMES_TUI_HOME and HOME, no proxy."""
    return {
        "HERMES_TUI_HOME": str(home),
        "HOME": str(tmp_path),
        "NO_PROXY": "*",
        "PATH": os.environ.get("PATH", ""),
    }


@pytest.fixture
def model_server(tmp_path: Path, hermes_home: Path) -> Iterator[Any]:
    """`server = model_server(script, **agent)`: serve `script` and point the config at it."""
    servers: list[ModelServer] = []

    def start(script: dict[str, Any], **agent: Any) -> ModelServer:
        server = ModelServer(script, tmp_path)
        servers.append(server)
        write_config(hermes_home, server.openai_base_url, **agent)
        return server

    try:
        yield start
    finally:
        for server in servers:
            server.stop()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The folder the app is started in (its workspace)."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "README.md").write_text("# sample project\n", encoding="utf-8")
    return root


@pytest.fixture
def terminal(tmp_path: Path, hermes_home: Path) -> Iterator[Terminal]:
    """A private tmux server for the app; killed in teardown, whatever the test did."""
    term = Terminal(tmp_path, app_env(hermes_home, tmp_path))
    try:
        yield term
    finally:
        term.kill()
