"""Fixtures for the `realmodel` tests: a real llama.cpp server and a real model, cached.

`tests/realmodel/setup.sh` builds llama-server and fetches SmolLM2-135M-Instruct into the
cache ($HERMES_TUI_REALMODEL_CACHE, default ~/.cache/hermes-tui-realmodel); without it every
test here is skipped, saying how to build it. A server is started per chat template and
context size, on a port it picks itself, and killed (by its pid) when the session ends.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import urllib.request
from pathlib import Path

import pytest
import yaml
from helpers import LoopThread
from waits import wait_until

from agent.config import load_config
from agent.loop import Agent
from storage.db import SessionDB

CACHE = Path(
    os.environ.get("HERMES_TUI_REALMODEL_CACHE") or "~/.cache/hermes-tui-realmodel"
).expanduser()
SERVER = CACHE / "bin" / "llama-server"
MODEL = CACHE / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
TEMPLATES = CACHE / "templates"
START_SECONDS = 120.0
LISTENING = re.compile(rb"listening on http://127\.0\.0\.1:(\d+)")


def cache_ready() -> bool:
    """True when the server and the model are in the cache."""
    return SERVER.is_file() and os.access(SERVER, os.X_OK) and MODEL.is_file()


def pytest_collection_modifyitems(config, items):
    if cache_ready():
        return
    skip = pytest.mark.skip(
        reason=f"no llama-server and model in {CACHE}: run tests/realmodel/setup.sh first"
    )
    for item in items:
        if "realmodel" in item.keywords:
            item.add_marker(skip)


class LlamaServer:
    """One llama-server process: started with a chat template and a context size."""

    def __init__(self, template: str | None, context: int) -> None:
        self.log = Path(tempfile.mkstemp(prefix="llama-server-", suffix=".log")[1])
        args = [str(SERVER), "-m", str(MODEL), "--jinja", "--temp", "0", "-n", "1024"]
        args += ["-c", str(context), "-np", "1", "--host", "127.0.0.1", "--port", "0"]
        if template is not None:
            args += ["--chat-template-file", str(TEMPLATES / template)]
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)
        self.port = self._wait_ready()

    @property
    def base_url(self) -> str:
        """The OpenAI-wire base URL."""
        return f"http://127.0.0.1:{self.port}/v1"

    def _wait_ready(self) -> int:
        """The port, once the server listens and its model is loaded (health says ok)."""

        def ready() -> int | None:
            if self.process.poll() is not None:
                raise RuntimeError(f"llama-server exited: {self.tail()}")
            found = LISTENING.search(self.log.read_bytes())
            return int(found.group(1)) if found and self._healthy(int(found.group(1))) else None

        try:
            return wait_until(ready, timeout=START_SECONDS, what="llama-server", interval=0.1)
        except BaseException:
            self.stop()
            raise

    @staticmethod
    def _healthy(port: int) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False  # 503 while the model loads, or not accepting yet

    def tail(self) -> str:
        """The last lines of the server's log."""
        return self.log.read_text(errors="replace")[-2000:]

    def stop(self) -> None:
        """Kill this server (by its own pid) and wait for it."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self.log.unlink(missing_ok=True)


@pytest.fixture(scope="session")
def llama():
    """`llama(template=None, context=8192)`: a running server, one per (template, context)."""
    servers: dict[tuple[str | None, int], LlamaServer] = {}

    def get(template: str | None = None, context: int = 8192) -> LlamaServer:
        key = (template, context)
        if key not in servers:
            servers[key] = LlamaServer(template, context)
        return servers[key]

    yield get
    for server in servers.values():
        server.stop()


class RealHarness:
    """Agents on a real server, in an isolated home, with a real store on a loop thread."""

    def __init__(self, home: Path, workspace: Path) -> None:
        self.home = home
        self.workspace = workspace
        self.loop = LoopThread()
        self.db: SessionDB | None = None
        self.events: list = []
        self.agents: list[Agent] = []

    def agent(self, server: LlamaServer, *, provider=None, agent=None, compression=None, **kw):
        """An Agent whose only provider is `server` (model `smollm`)."""
        llama = {"kind": "openai", "base_url": server.base_url, **(provider or {})}
        data = {
            "model": "llama:smollm",
            "providers": {"llama": llama},
            "agent": {"approval": "yolo", "retry_base_seconds": 0.01, **(agent or {})},
        }
        if compression is not None:
            data["compression"] = compression
        (self.home / "config.yaml").write_text(yaml.safe_dump(data))
        if self.db is None:
            self.db = self.loop.run(SessionDB.open(self.home / "state.db"))
        agent_ = Agent(
            load_config(), store=self.db, sink=self.events.append, workspace=self.workspace, **kw
        )
        self.agents.append(agent_)
        return agent_

    def session(self, session_id: str) -> dict:
        """The session's row once every queued token count is written."""
        for agent_ in self.agents:
            agent_.writer.flush(session_id, tokens=True, when="test")
        return self.loop.run(self.db.get_session(session_id))

    def close(self) -> None:
        for agent_ in self.agents:
            agent_.close()
        if self.db is not None:
            self.loop.run(self.db.close())
        self.loop.close()


@pytest.fixture
def real(hermes_home, tmp_path):
    """A RealHarness in an isolated home and workspace."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("hello\n")
    harness = RealHarness(hermes_home, workspace)
    yield harness
    harness.close()
