"""The /help screen, generated from the command table and the bindings table."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.widgets import Static

from hermes_tui.commands import COMMANDS, SlashCommand
from hermes_tui.safe_text import safe_line, safe_name
from hermes_tui.screens.dialog import DialogScreen

NEWLINE_HELP = (
    "alt+enter or ctrl+j (shift+enter where the terminal reports it), "
    "or end the line with \\ and press enter"
)
REMAP_HELP = "Remap a key by its id in config.yaml, e.g. keys: {turn.steer: ctrl+y}"
SANDBOX_CHANGE = "Change the list with sandbox: {hide: [...], allow_read: [...]} in config.yaml."

if TYPE_CHECKING:
    from agent.tools.sandbox import Sandbox


def sandbox_help(sandbox: Sandbox, homes: Sequence[Path]) -> str:
    """The /help section on the shell sandbox: what commands do not see, or why nothing is
    confined (H9)."""
    from agent.config import tilde

    if not sandbox.active:
        why = sandbox.state.reason or "the sandbox is off"
        return f"Shell commands are not sandboxed: {why}."
    own = ", ".join(tilde(home) for home in homes)
    places = ", ".join(sandbox.hidden_places())
    return (
        f"Shell commands run under bubblewrap and see these as empty, read-only places: the "
        f"app's own home ({own}) and {places}. {SANDBOX_CHANGE}"
    )


def command_line(command: SlashCommand, width: int, room: int | None = None) -> Content:
    """One command's line: usage, help, and where a command not built in comes from; a usage
    wider than its column has the line to itself, the help under it in the column (the help
    never runs into it, as `/mcp`'s once did). With `room` (the cells the help has), a long
    help wraps within its column, never back to the left edge."""
    # A custom command's name, hint and description come from a file: shown exactly.
    usage = safe_name(command.usage)
    if len(usage) > width - 2:
        usage = usage + "\n" + " " * width
    said = safe_name(command.help) + (f"  ({safe_name(command.origin)})" if command.origin else "")
    if room is not None and room > 10:
        said = ("\n" + " " * width).join(textwrap.wrap(said, room) or [""])
    origin = f"({safe_name(command.origin)})" if command.origin else ""
    if origin and said.endswith(origin):
        return Content.assemble(
            (usage.ljust(width), "bold $accent"), said[: -len(origin)], (origin, "dim")
        )
    return Content.assemble((usage.ljust(width), "bold $accent"), said)


class HelpScreen(DialogScreen[None]):
    """Lists every slash command and key binding; escape closes it."""

    # Its rules load with it, not with the first frame (Z2, `bench startup`).
    DEFAULT_CSS = """
    #help-dialog {
        max-width: 90;
        max-height: 90%;
    }

    #help-body {
        height: auto;
        max-height: 24;
    }

    #help-keys {
        margin: 0 0 1 0;
    }

    #help-dialog .help-heading {
        text-style: bold;
        color: $accent;
        padding: 0 1;
    }
    """

    BINDINGS = [Binding("escape,q,f1", "dismiss", "close", id="help.close")]

    def __init__(
        self,
        keys: list[tuple[str, str, str]],
        commands: Sequence[SlashCommand] | None = None,
        *,
        sandbox: str = "",
    ) -> None:
        super().__init__()
        self.keys = keys
        self.commands = list(COMMANDS if commands is None else commands)
        self.sandbox = sandbox

    @property
    def usage_width(self) -> int:
        """The usage column's cells."""
        return min(max(len(command.usage) for command in self.commands) + 2, 40)

    def compose(self) -> ComposeResult:
        width = self.usage_width
        command_lines = [command_line(command, width) for command in self.commands]
        keys = [*self.keys, ("newline", NEWLINE_HELP, "")]
        key_width = max(len(key) for key, _, _ in keys) + 2
        key_lines = [
            Content.assemble(
                (key.ljust(key_width), "bold $accent"),
                description,
                (f"  {binding_id}" if binding_id else "", "dim"),
            )
            for key, description, binding_id in keys
        ]
        with Vertical(id="help-dialog", classes="dialog"):
            yield Static(Content.styled("Commands", "bold"), classes="help-heading")
            with VerticalScroll(id="help-body"):
                yield Static(Content("\n").join(command_lines), id="help-commands")
                yield Static(Content.styled("Keys", "bold"), classes="help-heading")
                yield Static(Content("\n").join(key_lines), id="help-keys")
                yield Static(Content.styled(REMAP_HELP, "dim"))
                if self.sandbox:
                    yield Static(Content.styled("Sandbox", "bold"), classes="help-heading")
                    # Paths from config.yaml: shown exactly, never read as markup.
                    yield Static(Content(safe_line(self.sandbox)), id="help-sandbox")
            yield Static(Content.styled("escape closes", "dim"))

    def on_mount(self) -> None:
        # The help column's room is known once laid out: each help wraps within it.
        self.call_after_refresh(self._fit_commands)

    def on_resize(self, _event: events.Resize) -> None:
        self.call_after_refresh(self._fit_commands)

    def _fit_commands(self) -> None:
        commands = self.query_one("#help-commands", Static)
        width = self.usage_width
        room = commands.content_region.width - width
        commands.update(
            Content("\n").join(command_line(command, width, room) for command in self.commands)
        )

    def scroll_by_page(self, step: int) -> None:
        """PageUp (-1) / PageDown (1): scroll the list by a page (the app's page keys land
        here while the help is open)."""
        body = self.query_one("#help-body", VerticalScroll)
        if step < 0:
            body.scroll_page_up(animate=False)
        else:
            body.scroll_page_down(animate=False)

    async def action_dismiss(self, result: None = None) -> None:
        """Close the help screen."""
        self.dismiss(result)
