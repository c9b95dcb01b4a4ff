"""Fixtures for whole turns over real HTTP against the scripted server, on real SQLite."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import LoopThread, write_config

from agent.config import load_config
from agent.loop import Agent
from agent.scripted import Script, ScriptedServer
from storage.db import SessionDB


class Harness:
    """A scripted server, a store on a loop thread, and agents wired to both."""

    def __init__(self, home: Path, workspace: Path) -> None:
        self.home = home
        self.workspace = workspace
        self.loop = LoopThread()
        self.server: ScriptedServer | None = None
        self.db: SessionDB | None = None
        self.events: list = []
        self.agents: list[Agent] = []

    def start(self, script: dict, *, wire: str = "openai", **config_kw) -> Agent:
        """Serve `script`, write a config for `wire`, open the store, return a new Agent."""
        self.server = ScriptedServer(Script.from_dict(script)).start()
        write_config(self.home, self.server, wire=wire, **config_kw)
        self.db = self.loop.run(SessionDB.open(self.home / "state.db"))
        return self.agent()

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
        if self.server is not None:
            self.server.stop()
        self.loop.close()


@pytest.fixture
def harness(hermes_home, tmp_path):
    """A Harness in an isolated home and workspace."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "README.md").write_text("# sample\n")
    h = Harness(hermes_home, workspace)
    yield h
    h.close()


@pytest.fixture
def mcp(harness):
    """The harness with MCP servers: `mcp.start(script, {"name": entry}, ...)` (M1, M2)."""
    from mcp_harness import McpHarness

    m = McpHarness(harness)
    yield m
    m.close()
