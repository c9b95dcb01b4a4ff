"""Shared fixtures: an isolated HERMES_TUI_HOME and HOME for every test, no real provider keys."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

pytest_plugins = ["exit_guard"]


def _write_compiled_modules() -> None:
    """Every process of a run (workers and the app processes tests start) reuses compiled modules.

    Where PYTHONDONTWRITEBYTECODE is set (as on some CI images) a fresh clone never gets
    its modules compiled to disk, so each of the suite's hundreds of `hermes-tui`
    subprocesses compiled all of our modules again (about 0.3 s of CPU each). The suite
    writes the usual `__pycache__` folders (ignored by git), as Python does by default.
    """
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.dont_write_bytecode = False


_write_compiled_modules()

_PROVIDER_ENV = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "OPENROUTER_API_KEY",
    "GEMINI_API_KEY",
    "XAI_API_KEY",
    "NOUS_API_KEY",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
)


@pytest.fixture(scope="session")
def worker_scripted_server():
    """The one scripted server of this test process; tests reach it through `servers`."""
    from helpers import WorkerScriptedServer

    worker = WorkerScriptedServer()
    yield worker
    worker.close()


@pytest.fixture
def servers(worker_scripted_server):
    """This test's scripted servers: `servers.start(Script)` (the first is the worker's)."""
    from helpers import ScriptedServers

    mine = ScriptedServers(worker_scripted_server)
    yield mine
    mine.close()


@pytest.fixture
def in_process_servers():
    """This test's in-process scripted servers: `in_process_servers.start(Script)`, answered
    through the real SDKs and httpx2 with no socket; for tests that are not about the wire."""
    from helpers import InProcessServers

    mine = InProcessServers()
    yield mine
    mine.close()


@pytest.fixture(autouse=True)
def hermes_home(tmp_path, monkeypatch):
    """Every test gets its own HERMES_TUI_HOME and a clean provider environment."""
    home = tmp_path / "hermes-home"
    home.mkdir()
    monkeypatch.setenv("HERMES_TUI_HOME", str(home))
    # A user's home of its own too: a test that runs a hostile command for real (or a
    # matcher broken on purpose, to see a test bite) reaches only this folder, never the
    # home of whoever runs the suite. pyenv's shims find their root from HOME: kept.
    pyenv = os.environ.get("PYENV_ROOT") or str(Path.home() / ".pyenv")
    if Path(pyenv).is_dir():
        monkeypatch.setenv("PYENV_ROOT", pyenv)
    user_home = tmp_path / "user-home"
    user_home.mkdir()
    monkeypatch.setenv("HOME", str(user_home))
    for name in _PROVIDER_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "*")
    # The key bar's newline key follows the terminal: the same plain terminal for every test.
    for name in ("TERM_PROGRAM", "KITTY_WINDOW_ID", "TMUX", "STY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    from agent.providers.discovery import SERVERS

    SERVERS.clear()  # what servers said is per process: each test asks its own
    return home
