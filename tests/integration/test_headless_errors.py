"""Bad input in headless mode: one clear sentence, no traceback, non-zero exit, intact database."""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys

import pytest
import yaml
from headless_inprocess import run_cli_in_process
from helpers import write_config

from agent.scripted import Script, ScriptedServer


def _env(home):
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["HERMES_TUI_HOME"] = str(home)
    return env


def run_cli(home, *args, cwd=None):
    """`hermes-tui *args` in this process: these tests are about what a run says and stores.

    The process boundary itself is kept by test_version and test_demo_run below. Without a
    `cwd` the run works in an empty folder of the test's, never in the checkout the suite
    runs from (a run checkpoints its workspace: that was the developer's whole tree)."""
    if cwd is None:
        cwd = home.parent / "workspace"
        cwd.mkdir(exist_ok=True)
    return run_cli_in_process(list(args), env=_env(home), cwd=cwd)


def run_cli_process(home, *args, cwd=None, timeout=60):
    """`python -m hermes_tui *args` as a process of its own."""
    return subprocess.run(
        [sys.executable, "-m", "hermes_tui", *args],
        capture_output=True,
        text=True,
        env=_env(home),
        cwd=cwd,
        timeout=timeout,
    )


def assert_one_clear_error(proc, *needles):
    assert proc.returncode != 0, proc.stdout
    assert "Traceback" not in proc.stderr, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("hermes-tui:")]
    assert len(errors) == 1, proc.stderr
    for needle in needles:
        assert needle.lower() in errors[0].lower(), errors[0]


def assert_database_intact(home, user_text):
    db = home / "state.db"
    if not db.exists():
        return
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        users = [r[0] for r in conn.execute("SELECT content FROM messages WHERE role='user'")]
    finally:
        conn.close()
    assert user_text in users


@pytest.fixture
def serve(hermes_home):
    servers = []

    def start(replies, wire="openai", **kw):
        server = ScriptedServer(Script.from_dict({"replies": replies})).start()
        servers.append(server)
        write_config(hermes_home, server, wire=wire, **kw)
        return server

    yield start
    for server in servers:
        server.stop()


def test_unreachable_server(hermes_home):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    (hermes_home / "config.yaml").write_text(
        yaml.safe_dump(
            {
                "model": "dead:m",
                "providers": {
                    "dead": {
                        "kind": "openai",
                        "base_url": f"http://127.0.0.1:{port}/v1",
                        "api_key": "k",
                    }
                },
                "agent": {"retry_base_seconds": 0.01, "max_retries": 2},
            }
        )
    )
    proc = run_cli(hermes_home, "run", "hello")
    assert_one_clear_error(proc, "nothing is listening", "dead", "fix the port")
    assert_database_intact(hermes_home, "hello")


@pytest.mark.parametrize(
    ("status", "needle", "wire"),
    [
        (401, "rejected the API key", "openai"),
        (401, "rejected the API key", "anthropic"),
        (429, "rate-limiting", "openai"),
        (429, "rate-limiting", "anthropic"),
        (500, "having trouble", "openai"),
        (500, "having trouble", "anthropic"),
    ],
)
def test_http_errors(hermes_home, serve, status, needle, wire):
    """U6, K2: a failed run exits non-zero with one sentence that says what to do."""
    reply = {"status": status, "error_message": "scripted failure"}
    server = serve([reply] * 5, wire=wire, agent={"max_retries": 3})
    proc = run_cli(hermes_home, "run", "hello")
    assert_one_clear_error(proc, needle)
    assert_database_intact(hermes_home, "hello")
    # 401 is not retried; 429 and 500 are, up to the bound.
    assert len(server.requests) == (1 if status == 401 else 3)
    assert "sk-test-key" not in proc.stderr


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_malformed_chunk(hermes_home, serve, wire):
    serve(
        [{"text": "hello there world", "malformed_after": 1, "chunk_size": 3}] * 2,
        wire=wire,
        agent={"max_retries": 2},
    )
    proc = run_cli(hermes_home, "run", "hello")
    assert_one_clear_error(proc, "does not parse")
    assert_database_intact(hermes_home, "hello")


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_connection_dropped_mid_stream(hermes_home, serve, wire):
    serve(
        [{"text": "a long answer that breaks", "drop_after": 2, "chunk_size": 3}] * 2,
        wire=wire,
        agent={"max_retries": 2},
    )
    proc = run_cli(hermes_home, "run", "hello")
    assert_one_clear_error(proc)
    assert_database_intact(hermes_home, "hello")


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_truncated_stream_is_retried_and_never_accepted(hermes_home, serve, wire):
    serve([{"text": "partial", "omit_finish": True}, {"text": "complete answer"}], wire=wire)
    proc = run_cli(hermes_home, "run", "hello")
    assert proc.returncode == 0, proc.stderr
    assert "complete answer" in proc.stdout
    assert "retrying" in proc.stderr


def test_broken_yaml(hermes_home):
    (hermes_home / "config.yaml").write_text("model: openai:gpt-4.1\nproviders: [unclosed\n")
    proc = run_cli(hermes_home, "run", "hello")
    assert_one_clear_error(proc, "config.yaml", "line", "broken yaml")
    assert proc.returncode == 1


def test_unknown_provider(hermes_home):
    (hermes_home / "config.yaml").write_text("model: nosuch:model\n")
    proc = run_cli(hermes_home, "run", "hello")
    assert_one_clear_error(proc, "nosuch", "line 1")


def test_unknown_key(hermes_home):
    (hermes_home / "config.yaml").write_text("agent:\n  max_iteratons: 3\n")
    proc = run_cli(hermes_home, "run", "hello")
    assert_one_clear_error(proc, "agent.max_iteratons", "line 2")


def test_unknown_model_flag_provider(hermes_home):
    proc = run_cli(hermes_home, "run", "--model", "ghost:x", "hello")
    assert_one_clear_error(proc, "ghost")


def test_missing_key_for_configured_provider(hermes_home):
    (hermes_home / "config.yaml").write_text(
        "providers:\n  openai: {kind: openai, api_key_env: OPENAI_API_KEY}\n"
    )
    proc = run_cli(hermes_home, "run", "--model", "openai:gpt-4.1", "hello")
    assert_one_clear_error(proc, "OPENAI_API_KEY")


def test_tool_path_outside_the_workspace(hermes_home, serve, tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    serve(
        [
            {
                "tool_calls": [
                    {"id": "c1", "name": "read_file", "arguments": {"path": "/etc/hostname"}}
                ]
            },
            {"text": "I cannot read that."},
        ]
    )
    proc = run_cli(hermes_home, "run", "read /etc/hostname", cwd=workspace)
    assert proc.returncode == 0, proc.stderr
    assert "outside the workspace" in proc.stderr
    conn = sqlite3.connect(hermes_home / "state.db")
    tool = conn.execute("SELECT content FROM messages WHERE role='tool'").fetchone()[0]
    conn.close()
    assert tool.startswith("Refused")


def test_ask_mode_without_yes_refuses_with_a_message_the_model_sees(hermes_home, serve, tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    write = {"name": "write_file", "arguments": {"path": "x.txt", "content": "hi"}}
    server = serve(
        [
            {"tool_calls": [{"id": "c1", **write}]},
            {"text": "ok"},
            {"tool_calls": [{"id": "c2", **write}]},
            {"text": "ok"},
        ],
        agent={"approval": "ask"},
    )
    proc = run_cli(hermes_home, "run", "write", cwd=workspace)
    assert proc.returncode == 0, proc.stderr
    assert not (workspace / "x.txt").exists()
    assert "approval" in str(server.requests[1].body["messages"][-1]["content"])
    proc = run_cli(hermes_home, "run", "--yes", "write", cwd=workspace)
    assert proc.returncode == 0, proc.stderr
    assert (workspace / "x.txt").read_text() == "hi"


def test_json_mode_prints_events(hermes_home, serve):
    """U6: `run --json` prints the events as JSON lines."""
    serve([{"reasoning": "hmm", "text": "hi there"}])
    proc = run_cli(hermes_home, "run", "--json", "hello")
    assert proc.returncode == 0, proc.stderr
    import json

    events = [json.loads(line) for line in proc.stdout.splitlines()]
    types = [e["type"] for e in events]
    assert types[0] == "TurnStarted" and types[-1] == "TurnFinished"
    assert "ReasoningDelta" in types
    assert "".join(e["text"] for e in events if e["type"] == "TextDelta") == "hi there"


def test_resume_continues_a_session(hermes_home, serve):
    """U6: headless runs share the database: `run --resume` continues a stored session."""
    server = serve([{"text": "first"}, {"text": "second"}])
    run_cli(hermes_home, "run", "one")
    listing = run_cli(hermes_home, "sessions", "list", "--json")
    import json

    session = json.loads(listing.stdout.splitlines()[0])
    proc = run_cli(hermes_home, "run", "--resume", session["id"], "two")
    assert proc.returncode == 0, proc.stderr
    contents = [m["content"] for m in server.requests[1].body["messages"] if m["role"] != "system"]
    assert contents == ["one", "first", "two"]


def test_version():
    proc = subprocess.run(
        [sys.executable, "-m", "hermes_tui", "--version"], capture_output=True, text=True
    )
    assert proc.stdout.startswith("hermes-tui ")


def test_demo_run(hermes_home):
    """U6: `hermes-tui run "task"` prints the answer and exits 0 (a process of its own)."""
    proc = run_cli_process(hermes_home, "run", "--demo", "hello")
    assert proc.returncode == 0, proc.stderr
    assert "demo model" in proc.stdout
