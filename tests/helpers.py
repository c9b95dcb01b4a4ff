"""Test helpers shared across suites: configs for the scripted server, an event loop thread."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    from agent.scripted import Script, ScriptedServer
    from storage import SessionDB


def write_config(
    home: Path,
    server: Any,
    *,
    wire: str = "openai",
    model: str = "test-model",
    agent: dict[str, Any] | None = None,
    provider: dict[str, Any] | None = None,
    compression: dict[str, Any] | None = None,
    **sections: Any,
) -> Path:
    """Write a config.yaml whose only provider is the scripted server on `wire`.

    `sections` are further top-level settings (`checkpoints={...}`, `sandbox="off"`).
    """
    base_url = server.openai_base_url if wire == "openai" else server.anthropic_base_url
    settings = {"retry_base_seconds": 0.01, "approval": "yolo", **(agent or {})}
    data = {
        "model": f"scripted:{model}",
        "providers": {
            "scripted": {
                "kind": wire,
                "base_url": base_url,
                "api_key": "sk-test-key-123456",
                **(provider or {}),
            }
        },
        "agent": settings,
    }
    if compression is not None:
        data["compression"] = compression
    data.update(sections)
    path = home / "config.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def unmarked(value: Any) -> Any:
    """`value` (a request body or part of one) without its prompt-cache breakpoints: the
    marks move from call to call, the bytes they sit on must not ($1, T7)."""
    if isinstance(value, dict):
        return {k: unmarked(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [unmarked(v) for v in value]
    return value


class WorkerScriptedServer:
    """The scripted server of one test process: each test loads its own script into it.

    Binding, serving and stopping a server per test cost more than the test's own requests;
    `reset` gives every test a fresh server in all that it can see (log, gates, counters, a
    URL of its own) on the same socket.
    """

    def __init__(self) -> None:
        self._server: ScriptedServer | None = None

    def load(self, script: Script) -> ScriptedServer:
        """The worker's server playing `script` from its start (a new one if a test stopped it)."""
        from agent.scripted import Script, ScriptedServer

        if self._server is None or self._server.stopped:
            self._server = ScriptedServer(Script()).start()
        return self._server.reset(script)

    def release(self) -> None:
        """Drop what a finished test left waiting (stalls, gates, connections)."""
        from agent.scripted import Script

        if self._server is not None and not self._server.stopped:
            self._server.reset(Script())

    def close(self) -> None:
        """Stop the server at the end of the run."""
        if self._server is not None:
            self._server.stop()


class ScriptedServers:
    """A test's scripted servers: the first is the worker's, loaded with the test's script;
    any further one (two providers at once) is a server of its own, stopped with the test."""

    def __init__(self, worker: WorkerScriptedServer) -> None:
        self._worker = worker
        self._loaded = False
        self._own: list[ScriptedServer] = []

    def start(self, script: Script) -> ScriptedServer:
        """A started server playing `script`."""
        from agent.scripted import ScriptedServer

        if not self._loaded:
            self._loaded = True
            return self._worker.load(script)
        server = ScriptedServer(script).start()
        self._own.append(server)
        return server

    def close(self) -> None:
        """Stop the test's own servers and free the worker's for the next test."""
        for server in self._own:
            server.stop()
        if self._loaded:
            self._worker.release()


class InProcessServers:
    """A test's in-process scripted servers (no socket, no thread), stopped with the test."""

    def __init__(self) -> None:
        self._started: list[ScriptedServer] = []

    def start(self, script: Script) -> ScriptedServer:
        """A started in-process server playing `script`."""
        from agent.scripted.in_process import InProcessScriptedServer

        server = InProcessScriptedServer(script).start()
        self._started.append(server)
        return server

    def close(self) -> None:
        """Stop every server the test started."""
        for server in self._started:
            server.stop()


class LoopThread:
    """An asyncio loop on its own thread: owns the SessionDB the way the TUI's loop does."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()

    def run(self, coro: Any, timeout: float = 30) -> Any:
        """Run a coroutine on the loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        """Stop the loop and join its thread."""
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)
        self.loop.close()


@contextmanager
def held_write_lock(path):
    """Hold BEGIN IMMEDIATE on path from another connection (in its own thread) until released."""
    held, release = threading.Event(), threading.Event()
    failure: list[BaseException] = []

    def holder():
        try:
            conn = sqlite3.connect(path, isolation_level=None)
            conn.execute("BEGIN IMMEDIATE")
            held.set()
            release.wait(60)
            conn.execute("COMMIT")
            conn.close()
        except BaseException as exc:  # surfaced by the test, not lost in the thread
            failure.append(exc)
            held.set()

    thread = threading.Thread(target=holder, daemon=True)
    thread.start()
    held.wait(10)
    assert not failure, failure
    try:
        yield release
    finally:
        release.set()
        thread.join(10)


@contextmanager
def released_by_flush(db: SessionDB):
    """Hold the token writer of `db` until someone flushes its queue.

    A reader that skips the flush reads stale figures; a path that flushes reads its writes.
    """
    gate = threading.Event()
    accounting = db.accounting
    real_apply, real_flush = accounting._apply_batch, accounting.flush_token_counts

    def held(deltas):
        if threading.current_thread() is accounting._thread:
            gate.wait(30)
        return real_apply(deltas)

    def flush(timeout=None):
        gate.set()
        return real_flush(timeout)

    accounting._apply_batch, accounting.flush_token_counts = held, flush
    try:
        yield gate
    finally:
        gate.set()
        accounting._apply_batch, accounting.flush_token_counts = real_apply, real_flush


def run_headless(
    home: Path, cwd: Path, *args: str, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """`hermes-tui run --yes ARGS` in a process of its own, in `home`, from `cwd` (its
    output as text; bounded by `timeout`, so a hang fails the test instead of the suite)."""
    env = {**os.environ, "HERMES_TUI_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "hermes_tui", "run", "--yes", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=timeout,
        check=False,
    )
