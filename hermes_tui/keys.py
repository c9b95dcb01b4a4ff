"""The key bindings: one table for the footer, /help and `keys:` in config.yaml (U3).

A `keys:` entry remaps a binding by its id; an id that names no binding is a config error
that names it and lists the ids there are, like any other unknown key in config.yaml.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from textual.binding import Binding

if TYPE_CHECKING:
    from textual.app import App

KEY_BINDINGS = [
    Binding("ctrl+q", "quit", "quit", id="app.quit", priority=True),
    Binding("escape", "stop", "stop", id="turn.stop"),
    # As in every peer: stop a running turn, else clear the composer, else quit on a second.
    Binding(
        "ctrl+c", "interrupt", "stop, clear or quit", id="app.interrupt", show=False, priority=True
    ),
    Binding("ctrl+n", "new_session", "new", id="session.new", priority=True),
    # As in Claude Code; priority: the screen would take it to move the focus back.
    Binding(
        "shift+tab",
        "cycle_mode",
        "mode: ask, auto-edit, plan",
        id="mode.cycle",
        show=False,
        priority=True,
    ),
    Binding("f1", "help", "help", id="app.help"),
    # Textual's own ctrl+p binding is hidden; ours shows the palette in the key bar.
    Binding("ctrl+p", "command_palette", "palette", id="app.palette", priority=True),
    Binding("f2", "toggle_sessions", "sessions", id="panel.sessions", priority=True),
    Binding("f3", "toggle_status", "status", id="panel.status", priority=True),
    Binding("ctrl+o", "focus_sessions", "focus sessions", id="focus.sessions", show=False),
    Binding(
        "ctrl+g",
        "search_sessions",
        "search sessions",
        id="sessions.search",
        show=False,
        priority=True,
    ),
    Binding("ctrl+l", "focus_composer", "focus input", id="focus.composer", show=False),
    # The footer shows these three only when they can act (see HermesApp.check_action).
    Binding("ctrl+s", "steer_composer", "steer", id="turn.steer", priority=True),
    Binding("f5", "focus_queue", "queue", id="queue.focus", priority=True),
    Binding("ctrl+r", "resume_queue", "resume queue", id="queue.resume", priority=True),
    Binding("ctrl+t", "focus_transcript", "focus transcript", id="focus.transcript", show=False),
    Binding("f4", "copy", "copy", id="copy.answer", priority=True),
    # A clipboard image (wl-paste, xclip) as an `@pasted:` mention, else the composer's own
    # paste; priority: the composer's ctrl+v would take it first.
    Binding(
        "ctrl+v",
        "paste_image",
        "paste an image",
        id="composer.paste_image",
        show=False,
        priority=True,
    ),
    # Priority: the focused composer would otherwise take these for its own cursor.
    Binding(
        "alt+up",
        "jump(-1)",
        "previous message",
        id="transcript.previous",
        show=False,
        priority=True,
    ),
    Binding("alt+down", "jump(1)", "next message", id="transcript.next", show=False, priority=True),
    Binding("pageup", "page(-1)", "page up", id="transcript.page_up", show=False, priority=True),
    Binding(
        "pagedown", "page(1)", "page down", id="transcript.page_down", show=False, priority=True
    ),
    Binding(
        "ctrl+end", "follow", "follow the newest", id="transcript.follow", show=False, priority=True
    ),
]
"""The app's own bindings, in the order the footer and /help show them."""


def known_binding_ids() -> list[str]:
    """Every binding id `keys:` may remap: the app's, and those of its widgets and dialogs."""
    # Here, not at import: the approval dialog is not on the way to the first frame, and this
    # runs only for a config that remaps keys.
    from hermes_tui.screens.approval import ApprovalScreen
    from hermes_tui.screens.help import HelpScreen
    from hermes_tui.widgets.composer import Composer
    from hermes_tui.widgets.queue_view import QueueList
    from hermes_tui.widgets.sessions_panel import SessionsPanel

    owners = (
        KEY_BINDINGS,
        Composer.BINDINGS,
        QueueList.BINDINGS,
        SessionsPanel.BINDINGS,
        ApprovalScreen.BINDINGS,
    )
    # Textual types BINDINGS as Binding or tuple; ours are all Binding (only those have ids).
    every = [b for bindings in (*owners, HelpScreen.BINDINGS) for b in bindings]
    ids = [b.id for b in every if isinstance(b, Binding)]
    return [binding_id for binding_id in ids if isinstance(binding_id, str)]


class KeyMap:
    """The bindings as remapped by `keys:`: what each id is bound to and how to show it."""

    def __init__(self, app: App[Any], remap: Mapping[str, str]) -> None:
        self._app = app
        self._remap = dict(remap)

    def keys_of(self, binding: Binding) -> list[str]:
        """The keys `binding` answers to now, first the one the footer shows."""
        keys = self._remap.get(binding.id or "", binding.key)
        return [key.strip() for key in keys.split(",")]

    def shown(self, binding_id: str) -> str:
        """The first key bound to `binding_id` as the footer shows it (after remapping)."""
        binding = next(b for b in KEY_BINDINGS if b.id == binding_id)
        return self._display(self.keys_of(binding)[0])

    def help_rows(self) -> list[tuple[str, str]]:
        """(keys, description) for every app binding, as currently mapped."""
        return [(keys, description) for keys, description, _id in self.help_table()]

    def help_table(self) -> list[tuple[str, str, str]]:
        """(keys, description, binding id) for every app binding and the sessions panel's: the
        id is what `keys:` in config.yaml remaps."""
        from hermes_tui.widgets.sessions_panel import SessionsPanel

        panel = [b for b in SessionsPanel.BINDINGS if isinstance(b, Binding) and b.id]
        return [
            (
                ", ".join(self._display(key) for key in self.keys_of(binding)),
                binding.description,
                binding.id or "",
            )
            for binding in (*KEY_BINDINGS, *panel)
        ]

    def _display(self, key: str) -> str:
        return self._app.get_key_display(Binding(key, ""))
