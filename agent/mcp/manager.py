"""McpManager: every configured MCP server, started in the background and reachable from
any thread (the UI reads, the agent's worker calls tools, commands restart and allow).

Nothing here blocks its caller longer than it asked: `start()` returns at once, a tool call
waits at most its timeout (and stops with the turn), `close()` is bounded, and the processes
of stdio servers are killed outright when the bound runs out.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent import events as ev
from agent.mcp import names as wire_names
from agent.mcp.connection import McpPrompt, McpTool, ServerConnection, State
from agent.mcp.loop import McpLoop
from agent.mcp.projects import ProjectDecisions, ProjectDecisionsError
from agent.mcp.settings import McpServerConfig, McpSettings, read_project_servers
from agent.mcp.stdio import kill_all_servers

if TYPE_CHECKING:
    from agent.config import Config

log = logging.getLogger("hermes_tui.mcp")

WAIT_POLL_SECONDS = 0.02


class McpManager:
    """The MCP servers of one run: config.yaml's and (once allowed) the project's."""

    def __init__(
        self,
        config: Config,
        workspace: Path,
        sink: ev.Sink | None = None,
        *,
        reserved: set[str] | None = None,
    ) -> None:
        """`reserved`: tool names already taken (the built-in tools)."""
        self.settings: McpSettings = config.mcp
        self.workspace = Path(workspace).resolve()
        self.sink: ev.Sink = sink or (lambda _event: None)
        self.loop = McpLoop()
        self.decisions = ProjectDecisions(config.home, self.workspace)
        self.problems: list[str] = []
        """Sentences about project servers that were skipped (shown once at start)."""
        self._reserved = set(reserved or ())
        self._names_lock = threading.Lock()
        self._closed = False
        self.servers: dict[str, ServerConnection] = {}
        for server in self._configured(config):
            self.servers[server.name] = ServerConnection(
                server,
                workspace=self.workspace,
                startup_timeout=server.startup_timeout_seconds
                or self.settings.startup_timeout_seconds,
                on_change=self._changed,
                assign_names=self._assign_names,
            )

    def _configured(self, config: Config) -> list[McpServerConfig]:
        servers = list(config.mcp_servers.values())
        project, self.problems = read_project_servers(self.workspace)
        keys = provider_key_variables(config)
        for server in project:
            if server.name in config.mcp_servers:
                self.problems.append(
                    f".mcp.json: server `{server.name}` is also in your config.yaml; yours is used."
                )
                continue
            # A repository must not send the user's provider keys to a server of its choice
            # (H5): a stdio server's environment never holds them either.
            reads = [name for name in server.variables() if name in keys]
            if reads:
                self.problems.append(
                    f".mcp.json: server `{server.name}` reads {', '.join(reads)}, a provider "
                    "key variable; it was skipped (a server in your own config.yaml may)."
                )
                continue
            servers.append(server)
        return servers

    # -- reading (any thread) -----------------------------------------------------------------
    def get(self, name: str) -> ServerConnection | None:
        """The server called `name`, or None."""
        return self.servers.get(name)

    def tools(self) -> list[McpTool]:
        """The tools of every ready server, servers in config order."""
        out: list[McpTool] = []
        for server in list(self.servers.values()):
            if server.state == State.READY:
                out.extend(server.tools)
        return out

    def prompts(self) -> list[McpPrompt]:
        """The prompts of every ready server."""
        out: list[McpPrompt] = []
        for server in list(self.servers.values()):
            if server.state == State.READY:
                out.extend(server.prompts)
        return out

    def starting(self) -> list[str]:
        """Names of servers still starting."""
        return [s.name for s in self.servers.values() if s.state == State.STARTING]

    def awaiting_consent(self) -> list[ServerConnection]:
        """Project servers the user has not allowed (as they are defined now)."""
        return [s for s in self.servers.values() if s.state == State.NEEDS_CONSENT]

    # -- life ---------------------------------------------------------------------------------
    def start(self) -> None:
        """Start every enabled server in the background; returns at once (M1)."""
        # Said first: a .mcp.json whose every server was skipped still says why.
        for sentence in self.problems:
            self.sink(ev.Notice(sentence, "warning"))
        if not self.servers:
            return
        for server in self.servers.values():
            if not server.config.enabled:
                server.settle(State.OFF)
            elif server.config.origin == "project" and not self.decisions.allowed(server.config):
                server.settle(State.NEEDS_CONSENT)
        startable = [s for s in self.servers.values() if s.state == State.STOPPED]
        waiting = self.awaiting_consent()
        if waiting:
            listed = ", ".join(f"{s.name} ({_consent_line(s.config)})" for s in waiting)
            first = waiting[0].name
            self.sink(
                ev.Notice(
                    f"This project's .mcp.json defines MCP servers you have not allowed: "
                    f"{listed}. Nothing was started; /mcp allow {first} in the app starts "
                    "one (once allowed, it starts with this project).",
                    "warning",
                )
            )
        for server in startable:
            server.mark_starting()  # starting from now on: a turn right away waits for it
        if startable:
            self.loop.submit(self._start_all(startable))

    async def _start_all(self, servers: list[ServerConnection]) -> None:
        for server in servers:
            server.start()

    def restart(self, name: str) -> str:
        """Stop and start `name` again (any thread); returns a sentence for the user."""
        server = self._known(name)
        if server.config.origin == "project" and not self.decisions.allowed(server.config):
            return f"{name} is a project server you have not allowed: /mcp allow {name}."
        self._begin_restart(server)
        return f"Restarting MCP server {name}."

    async def _restart(self, server: ServerConnection) -> None:
        await server.stop()
        server.start()

    def _begin_restart(self, server: ServerConnection) -> None:
        server.mark_starting()
        self.loop.submit(self._restart(server))

    def disable(self, name: str) -> str:
        """Stop `name` for the rest of this session; its tools leave the request."""
        server = self._known(name)
        self.loop.call(server.stop(State.DISABLED), timeout=10.0)
        return f"MCP server {name} is off for this session: /mcp restart {name} brings it back."

    def allow(self, name: str) -> str:
        """The user's consent to a project server: remembered, then it starts."""
        server = self._known(name)
        if server.config.origin != "project":
            return f"{name} is configured in your config.yaml; it needs no consent."
        try:
            self.decisions.allow(server.config)
        except ProjectDecisionsError as exc:
            return str(exc)
        self._begin_restart(server)
        return f"Allowed {name} for this project ({server.config.describe()}); starting it."

    def _known(self, name: str) -> ServerConnection:
        server = self.servers.get(name)
        if server is None:
            known = ", ".join(self.servers) or "none"
            raise LookupError(f"No MCP server called {name!r} (configured: {known}).")
        return server

    def wait_starting(self, timeout: float, stopped: Callable[[], bool]) -> list[str]:
        """Block (a worker thread) until no server is starting, `timeout` passes or a stop;
        returns the servers still starting then. Tells the sink while it waits."""
        still = self.starting()
        if not still or timeout <= 0:
            return still
        self.sink(ev.McpWaiting(tuple(still)))
        deadline = time.monotonic() + timeout
        try:
            while still and time.monotonic() < deadline and not stopped():
                time.sleep(WAIT_POLL_SECONDS)
                still = self.starting()
        finally:
            self.sink(ev.McpWaiting(()))
        return still

    # -- calls (a worker thread) ------------------------------------------------------------
    def call_tool(
        self,
        server: str,
        tool: str,
        arguments: dict[str, Any],
        *,
        timeout: float,
        cancel: threading.Event | None,
    ) -> Any:
        """Call one tool and wait: TimeoutError, CallCancelled, or the server's error."""
        connection = self._known(server)
        return self.loop.call(
            connection.call_tool(tool, arguments, timeout), timeout=timeout, cancel=cancel
        )

    def check_alive_later(self, server: str) -> None:
        """After a timeout: ping the server in the background; no answer fails it."""
        connection = self.servers.get(server)
        if connection is not None:
            self.loop.submit(connection.check_alive())

    def get_prompt(self, server: str, prompt: str, arguments: dict[str, str]) -> Any:
        """A prompt's messages (blocks the calling thread up to the call timeout)."""
        connection = self._known(server)
        return self.loop.call(
            connection.get_prompt(prompt, arguments), timeout=self.settings.call_timeout_seconds
        )

    def timeout_for(self, server: str) -> float:
        """The tool-call timeout of `server`."""
        connection = self._known(server)
        return connection.config.timeout_seconds or self.settings.call_timeout_seconds

    # -- names and state ----------------------------------------------------------------------
    def _assign_names(self, server: ServerConnection, tools: list[str]) -> dict[str, str]:
        """Unique wire names for a server's tools, none taken by a built-in or another server."""
        with self._names_lock:
            taken = set(self._reserved)
            for other in self.servers.values():
                if other is not server:
                    taken.update(tool.wire for tool in other.tools)
            return wire_names.assign(server.name, tools, taken)

    def _changed(self, server: ServerConnection) -> None:
        states = [s.state for s in self.servers.values()]
        self.sink(
            ev.McpStatus(
                ready=states.count(State.READY),
                starting=states.count(State.STARTING),
                failed=states.count(State.FAILED),
                total=len(states),
                server=server.name,
                state=str(server.state),
                error=server.error,
            )
        )
        if server.state == State.FAILED and not self._closed:
            self.sink(
                ev.Notice(
                    f"MCP server {server.name} failed: {server.error}. Its tools are not "
                    f"offered; /mcp restart {server.name} tries again.",
                    "warning",
                )
            )

    def close(self, timeout: float = 3.0) -> None:
        """Stop every server within `timeout`, then kill what is left and the loop."""
        if self._closed:
            return
        self._closed = True
        # A server still starting may have its task scheduled but not yet run: stop it too
        # (the loop runs the start first, in order).
        running = [s for s in self.servers.values() if s.running or s.state == State.STARTING]
        if running:
            try:
                self.loop.call(self._stop_all(running), timeout=timeout)
            except Exception as exc:  # a bounded close: whatever remains is killed below
                log.warning("MCP servers did not all stop in %.1f s: %s", timeout, exc)
        kill_all_servers()
        self.loop.close()

    async def _stop_all(self, servers: list[ServerConnection]) -> None:
        import asyncio

        await asyncio.gather(*(s.stop() for s in servers), return_exceptions=True)


def provider_key_variables(config: Config) -> set[str]:
    """The environment variables that hold provider keys: the standard ones and any a
    configured provider names."""
    from agent.secrets import STANDARD_KEY_ENV

    names = set(STANDARD_KEY_ENV)
    names.update(p.api_key_env for p in config.providers.values() if p.api_key_env)
    return names


def _consent_line(server: McpServerConfig) -> str:
    """What a project server runs, and the variables of yours it would read."""
    reads = server.variables()
    suffix = f"; reads {', '.join('$' + name for name in reads)}" if reads else ""
    return server.describe() + suffix
