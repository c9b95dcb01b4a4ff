"""The /help screen, generated from the command table and the bindings table."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from hermes_tui.commands import COMMANDS

NEWLINE_HELP = (
    "alt+enter or ctrl+j (shift+enter where the terminal reports it), "
    "or end the line with \\ and press enter"
)
REMAP_HELP = "Remap a key by its id in config.yaml, e.g. keys: {turn.steer: ctrl+y}"


class HelpScreen(ModalScreen[None]):
    """Lists every slash command and key binding; escape closes it."""

    BINDINGS = [Binding("escape,q,f1", "dismiss", "close", id="help.close")]

    def __init__(self, keys: list[tuple[str, str, str]]) -> None:
        super().__init__()
        self.keys = keys

    def compose(self) -> ComposeResult:
        width = max(len(command.usage) for command in COMMANDS) + 2
        command_lines = [
            Content.assemble((command.usage.ljust(width), "bold $accent"), command.help)
            for command in COMMANDS
        ]
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
        with Vertical(id="help-dialog"):
            yield Static(Content.styled("Commands", "bold"), classes="help-heading")
            with VerticalScroll(id="help-body"):
                yield Static(Content("\n").join(command_lines), id="help-commands")
                yield Static(Content.styled("Keys", "bold"), classes="help-heading")
                yield Static(Content("\n").join(key_lines), id="help-keys")
                yield Static(Content.styled(REMAP_HELP, "dim"))
            yield Static(Content.styled("escape closes", "dim"))

    async def action_dismiss(self, result: None = None) -> None:
        """Close the help screen."""
        self.dismiss(result)
