"""What an empty transcript says: where the agent works and how to drive it (U1).

Shown while the session has no message yet (at start, after /new); the first message sent,
or a resumed session's history, takes its place.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.content import Content
from textual.widgets import Static

from hermes_tui.safe_text import safe_line


@dataclass(frozen=True)
class WelcomeFacts:
    """What the welcome names: the workspace's folder, the approval mode and the keys."""

    folder: str
    approval: str
    stop_key: str
    steer_key: str
    help_key: str


def welcome_content(facts: WelcomeFacts) -> Content:
    """The welcome's lines, each short enough for the transcript of an 80-column terminal;
    the folder's name comes from outside (every hidden character shown)."""
    asks = {
        "ask": "asking before every edit and command",
        "auto-edit": "editing without asking",
        "yolo": "running everything without asking",
    }.get(facts.approval, f"approval {facts.approval}")
    return Content.assemble(
        ("hermes-tui", "bold $accent"),
        " works in ",
        (safe_line(facts.folder), "bold"),
        f", {asks}.\n",
        ("Type a task and press Enter. While it works, keep typing:\n", "dim"),
        (f"Enter queues a message, {facts.steer_key} steers the turn, ", "dim"),
        (f"{facts.stop_key} stops it.\n", "dim"),
        (f"@ attaches a file · / lists commands · {facts.help_key} help", "dim"),
    )


class Welcome(Static):
    """The empty transcript's few lines."""

    DEFAULT_CSS = """
    Welcome {
        padding: 1 1;
        height: auto;
    }
    """

    def __init__(self, facts: WelcomeFacts) -> None:
        super().__init__(welcome_content(facts))
