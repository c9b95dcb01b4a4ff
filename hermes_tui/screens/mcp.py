"""The /mcp panel: every MCP server with its state, and restart / disable / stderr / allow.

It reads the manager's snapshot twice a second and never waits on a server: an action runs
on a thread (a disable waits for the server to stop), and its sentence is a notice.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from textual.binding import Binding
from textual.content import Content
from textual.widgets.option_list import Option

from hermes_tui.mcp_view import server_detail, server_row, stderr_text
from hermes_tui.screens.list_detail import ListDetailScreen

HINT = "↑↓ server · r restart · d off for this session · s stderr · a allow (project) · Esc close"


class McpScreen(ListDetailScreen):
    """Lists the MCP servers; the highlighted one's details (or stderr) below."""

    PREFIX = "mcp"
    LIST_ID = "mcp-servers"
    TITLE_TEXT = "MCP servers"
    HINT_TEXT = HINT

    BINDINGS = [
        Binding("escape,q", "dismiss_panel", "close", id="mcp.close"),
        Binding("r", "act('restart')", "restart", id="mcp.restart"),
        Binding("d", "act('disable')", "disable", id="mcp.disable"),
        Binding("a", "act('allow')", "allow", id="mcp.allow"),
        Binding("s", "toggle_stderr", "stderr", id="mcp.stderr"),
    ]

    def __init__(
        self,
        manager: Any,
        notice: Callable[[str, str], Awaitable[None]],
        *,
        focus_server: str | None = None,
        show_stderr: bool = False,
        session_allowed: Callable[[str, str], bool] | None = None,
    ) -> None:
        super().__init__()
        self.manager = manager
        self._session_allowed = session_allowed
        self._notice = notice
        self._focus = focus_server
        self.showing_stderr = show_stderr

    def on_mount(self) -> None:
        names = list(self.manager.servers)
        options = self.rows
        options.add_options([Option(server_row(s), id=s.name) for s in self._servers()])
        if names:
            options.highlighted = names.index(self._focus) if self._focus in names else 0
        options.focus()
        self.keep_fresh()

    def _servers(self) -> list[Any]:
        return list(self.manager.servers.values())

    @property
    def selected(self) -> Any:
        """The highlighted server, or None."""
        options = self.rows
        if options.highlighted is None:
            return None
        option = options.get_option_at_index(options.highlighted)
        return self.manager.servers.get(option.id or "")

    def refresh_view(self) -> None:
        """Redraw the rows and the detail from the manager's current state."""
        options = self.rows
        for index, server in enumerate(self._servers()):
            if index < options.option_count:
                options.replace_option_prompt_at_index(index, server_row(server))
        server = self.selected
        detail = self.detail
        if server is None:
            detail.update(Content("No MCP servers."))
        elif self.showing_stderr:
            detail.update(Content(stderr_text(server)))
        else:
            trusted = self.manager.decisions.trusted
            detail.update(Content(server_detail(server, trusted, self._session_allowed)))

    def action_toggle_stderr(self) -> None:
        """Show the server's stderr tail instead of its details, or back."""
        self.showing_stderr = not self.showing_stderr
        self.refresh_view()

    async def action_act(self, verb: str) -> None:
        """Restart, disable or allow the highlighted server, off the UI thread."""
        server = self.selected
        if server is None:
            return
        method = getattr(self.manager, verb)
        try:
            sentence = await asyncio.to_thread(method, server.name)
        except Exception as exc:  # one sentence, never a traceback
            sentence, level = str(exc), "error"
        else:
            level = "info"
        await self._notice(sentence, level)
        self.refresh_view()
