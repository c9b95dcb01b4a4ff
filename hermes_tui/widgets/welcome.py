"""What an empty session's transcript says: where you are and how to start (U1).

Shown at the top of a new session (at start, after /new) until the first message is sent;
a resumed session's history takes its place and never shows it.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.content import Content
from textual.widgets import Static

from hermes_tui.safe_text import safe_line

MODE_WORDS = {
    "ask": "edits and commands ask first",
    "auto-edit": "edits without asking, commands ask",
    "plan": "reads and plans, changes nothing",
    "yolo": "nothing asks",
}
"""What each approval mode means, in a few words."""


@dataclass(frozen=True)
class WelcomeFacts:
    """What the welcome names, as plain text: the model, the workspace, the approval mode,
    the sandbox, how to set up a provider, and the keys to start with."""

    model: str
    workspace: str
    mode: str
    sandbox: str
    provider_hint: str
    send_key: str
    stop_key: str
    help_key: str


def welcome_content(facts: WelcomeFacts) -> Content:
    """The welcome's lines, each short enough for an 80-column terminal's transcript; the
    model and folder names come from outside (every hidden character shown, H1)."""
    mode = MODE_WORDS.get(facts.mode)
    return Content.assemble(
        ("hermes-tui", "bold $accent"),
        " on ",
        (safe_line(facts.model), "bold"),
        "\n",
        ("in ", "dim"),
        (safe_line(facts.workspace), "bold"),
        "\n",
        ("mode ", "dim"),
        facts.mode,
        (f" ({mode})" if mode else "", "dim"),
        ("  sandbox ", "dim"),
        facts.sandbox or "off",
        "\n\n",
        (safe_line(facts.provider_hint), "dim"),
        "\n\n",
        (facts.send_key, "bold"),
        " send a task  ",
        (facts.stop_key, "bold"),
        " stop it  ",
        (facts.help_key, "bold"),
        " every key and command",
    )


class Welcome(Static):
    """The empty session's few lines."""

    DEFAULT_CSS = """
    Welcome {
        padding: 1 1;
        height: auto;
    }
    """

    def __init__(self, facts: WelcomeFacts) -> None:
        super().__init__(welcome_content(facts))
