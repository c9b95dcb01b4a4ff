"""The key bar: one line of the bindings that can act now, drawn from the app's bindings table.

It replaces Textual's Footer, which mounts a widget per key and recomposes them on every focus
change; here a change of bindings repaints one line (the footer was a fifth of the first frame).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import events
from textual.content import Content
from textual.widget import Widget

if TYPE_CHECKING:
    from textual.screen import Screen

SEPARATOR = "  "
KEPT = "help"
"""The entry a narrow key bar keeps to the last: help lists every key."""


def _fitting(entries: list[tuple[str, str, Content]], width: int) -> list[tuple[str, str, Content]]:
    """The entries that fit in `width` cells, whole: the last ones go first, help stays."""
    entries = list(entries)

    def cells() -> int:
        return sum(part.cell_length for *_, part in entries) + len(SEPARATOR) * (len(entries) - 1)

    while len(entries) > 1 and cells() > width:
        doomed = next(i for i in reversed(range(len(entries))) if entries[i][1] != KEPT or i == 0)
        del entries[doomed]
    return entries


class KeyBar(Widget, can_focus=False):
    """The bottom line: `key description` for each shown binding; a click presses the key."""

    DEFAULT_CSS = """
    KeyBar {
        dock: bottom;
        height: 1;
        color: $footer-foreground;
        background: $footer-background;
        .key-bar--key {
            color: $footer-key-foreground;
            background: $footer-key-background;
            text-style: bold;
        }
        .key-bar--description {
            color: $footer-description-foreground;
            background: $footer-description-background;
        }
    }
    """
    COMPONENT_CLASSES = {"key-bar--key", "key-bar--description"}

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.entries: list[tuple[str, str, str, bool]] = []
        """(key, key display, description, enabled) for each shown binding, left to right."""
        self._spans: list[tuple[int, int, str]] = []

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)
        self._bindings_changed(self.screen)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen: Screen[object]) -> None:
        entries = []
        seen_actions: set[str] = set()
        for _node, binding, enabled, _tooltip in screen.active_bindings.values():
            # Two keys bound to one action show once, as the Footer did.
            if not binding.show or binding.action in seen_actions:
                continue
            seen_actions.add(binding.action)
            display = self.app.get_key_display(binding)
            entries.append((binding.key, display, binding.description, enabled))
        if entries != self.entries:
            self.entries = entries
            self.refresh()

    def render(self) -> Content:
        key_style = self.get_visual_style("key-bar--key")
        description_style = self.get_visual_style("key-bar--description")
        entries: list[tuple[str, str, Content]] = []
        for key, display, description, enabled in self.entries:
            part = Content.assemble((display, key_style), " ", (description, description_style))
            entries.append((key, description, part.stylize("dim") if not enabled else part))
        entries = _fitting(entries, self.size.width - 1)
        parts: list[Content] = []
        self._spans = []
        offset = 1
        for key, _description, part in entries:
            self._spans.append((offset, offset + part.cell_length, key))
            offset += part.cell_length + len(SEPARATOR)
            parts.append(part)
        return Content(" ") + Content(SEPARATOR).join(parts)

    def column_of(self, key: str) -> int:
        """The column where `key`'s entry starts (as last rendered)."""
        return next(start for start, _end, shown in self._spans if shown == key)

    def on_click(self, event: events.Click) -> None:
        for start, end, key in self._spans:
            if start <= event.x < end:
                self.app.simulate_key(key)
                return
