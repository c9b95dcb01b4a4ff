"""Fixtures for whole turns over real HTTP against the scripted server, on real SQLite."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import LoopThread, ScriptedServers, write_config

from agent.config import load_config
from agent.loop import Agent
from agent.scripted import Script, ScriptedServer
from storage.db import SessionDB


class Harness:
    """A scripted server, a store on a loop thread, and agents wired to both."""

    def __init__(self, home: Path, workspace: Path, servers: ScriptedServers | None = None) -> None:
        self.home = home
        self.workspace = workspace
        self.servers = servers
        self.loop = LoopThread()
        self.server: ScriptedServer | None = None
        self.db: SessionDB | None = None
        self.events: list = []
        self.agents: list[Agent] = []
        self._own_servers: list[ScriptedServer] = []

    def start(self, script: dict, *, wire: str = "openai", **config_kw) -> Agent:
        """Serve `script`, write a config for `wire`, open the store, return a new Agent."""
        self.server = self.serve(script)
        write_config(self.home, self.server, wire=wire, **config_kw)
        self.db = self.loop.run(SessionDB.open(self.home / "state.db"))
        return self.agent()

    def serve(self, script: dict) -> ScriptedServer:
        """A started server playing `script` (the worker's when the harness was given it)."""
        if self.servers is not None:
            return self.servers.start(Script.from_dict(script))
        server = ScriptedServer(Script.from_dict(script)).start()
        self._own_servers.append(server)
        return server

    def agent(self, **kw) -> Agent:
        """Another Agent on the same config and store."""
        agent = Agent(
            load_config(),
            store=self.db,
            sink=self.events.append,
            workspace=self.workspace,
            **kw,
        )
        # Engineers edit the tree while suites run; the installed code's fingerprint is
        # taken once here, so only the skew tests (which change it on purpose) see skew.
        installed = agent.skew_guard.fingerprint
        agent.skew_guard.compute_fingerprint = lambda: installed
        self.agents.append(agent)
        return agent

    def rows(self, session_id: str) -> list[dict]:
        """The persisted messages of a session."""
        return self.loop.run(self.db.load_messages(session_id))

    def bodies(self) -> list[dict]:
        """The JSON bodies of every request the server received."""
        return [r.body for r in self.server.requests]

    def close(self) -> None:
        for agent in self.agents:
            agent.close()
        if self.db is not None:
            self.loop.run(self.db.close())
        for server in self._own_servers:
            server.stop()
        self.loop.close()


@pytest.fixture
def harness(hermes_home, tmp_path, servers):
    """A Harness in an isolated home and workspace, on the worker's scripted server."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "README.md").write_text("# sample\n")
    h = Harness(hermes_home, workspace, servers)
    yield h
    h.close()


@pytest.fixture
def mcp(harness):
    """The harness with MCP servers: `mcp.start(script, {"name": entry}, ...)` (M1, M2)."""
    from mcp_harness import McpHarness

    m = McpHarness(harness)
    yield m
    m.close()
