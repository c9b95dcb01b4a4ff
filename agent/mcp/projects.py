"""The user's per-project MCP answers, kept in $HERMES_TUI_HOME/projects.yaml.

Two kinds: consent to start a project's `.mcp.json` server (for exactly the command it
showed: a changed definition asks again), and "always for this project" approvals of one
tool of one server. They live in the user's home, never in the repository: a repository
that could write them could pre-approve itself. The file is rewritten atomically and keeps
its mode (0600 when new); a file that does not parse is left alone and nothing is saved.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

from agent.mcp.settings import McpServerConfig

log = logging.getLogger("hermes_tui.mcp")

FILE_NAME = "projects.yaml"


class ProjectDecisionsError(Exception):
    """projects.yaml could not be read or written; the sentence says which and why."""


class ProjectDecisions:
    """What the user allowed and trusted in one workspace; safe to use from any thread."""

    def __init__(self, home: Path, workspace: Path) -> None:
        self.path = Path(home) / FILE_NAME
        self.key = str(Path(workspace).resolve())
        self._lock = threading.Lock()
        self._broken = ""
        self._mine = self._read().get(self.key) or {}

    def _read(self) -> dict[str, Any]:
        from agent.yaml_mapping import read_mapping

        data, self._broken = read_mapping(self.path)
        return data

    # -- consent ------------------------------------------------------------------------------
    def allowed(self, server: McpServerConfig) -> bool:
        """True when the user allowed exactly this definition of the project server."""
        with self._lock:
            return (self._mine.get("mcp_allowed") or {}).get(server.name) == server.fingerprint

    def allow(self, server: McpServerConfig) -> None:
        """Remember that the user allowed this project server (as defined now)."""
        self._update(
            lambda mine: _section(mine, "mcp_allowed").update({server.name: server.fingerprint})
        )

    # -- trust ------------------------------------------------------------------------------
    def trusted(self, server: str, tool: str) -> bool:
        """True when the user said "always for this project" to `tool` of `server`."""
        with self._lock:
            return tool in ((self._mine.get("mcp_trust") or {}).get(server) or [])

    def trust(self, server: str, tool: str) -> None:
        """Remember "always for this project" for `tool` of `server`."""

        def add(mine: dict[str, Any]) -> None:
            tools = _section(mine, "mcp_trust").setdefault(server, [])
            if tool not in tools:
                tools.append(tool)

        self._update(add)

    def _update(self, change: Any) -> None:
        """Re-read the file (another window may have written it), change ours, write it."""
        import yaml

        from storage.files import atomic_write, private_dir

        with self._lock:
            data = self._read()
            if self._broken:
                raise ProjectDecisionsError(f"Not saved: {self._broken}.")
            mine = data.setdefault(self.key, {})
            if not isinstance(mine, dict):
                mine = data[self.key] = {}
            change(mine)
            private_dir(self.path.parent)
            try:
                atomic_write(self.path, yaml.safe_dump(data, sort_keys=True, allow_unicode=True))
            except OSError as exc:
                raise ProjectDecisionsError(
                    f"Not saved: {self.path} cannot be written ({exc.strerror})."
                ) from None
            self._mine = mine


def _section(mine: dict[str, Any], key: str) -> dict[str, Any]:
    value = mine.get(key)
    if not isinstance(value, dict):
        value = mine[key] = {}
    return value
