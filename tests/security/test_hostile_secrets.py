"""Secrets stay out of tools (SPEC H5, K3), through the real headless app and the scripted server.

The model is hostile: it runs `env` and `cat .env` to fish for the user's keys. Keys must not
reach run_shell children (unless the user names them), nor the database, the printed events or
the next request; a base_url's credentials never reach the database or an error sentence; a key
that cannot go into a header is one sentence naming where it came from.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from agent.scripted import Script, ScriptedServer
from agent.secrets import STANDARD_KEY_ENV

PROVIDER_KEY = "sk-live-0123456789abcdefPROV"  # the active key, from $MY_PROVIDER_KEY
POOL_KEY = "pool-second-key-0123456789"  # the pool's second entry, from $MY_SECOND_KEY
ANTHROPIC_KEY = "sk-ant-0123456789abcdefANTH"  # a standard variable no provider here names
INLINE_KEY = "inline-other-key-0123456789"  # another provider's key, inline in config.yaml
ALL_KEYS = (PROVIDER_KEY, POOL_KEY, ANTHROPIC_KEY, INLINE_KEY)
KEY_ENV = {
    "MY_PROVIDER_KEY": PROVIDER_KEY,
    "MY_SECOND_KEY": POOL_KEY,
    "ANTHROPIC_API_KEY": ANTHROPIC_KEY,
    "ALIAS_OF_THE_KEY": PROVIDER_KEY,  # the same key under a name nobody configured
    "HARMLESS_VAR": "visible-to-tools",
}


@pytest.fixture
def serve():
    """Start scripted servers: `serve(replies)`; all are stopped at the end."""
    servers: list[ScriptedServer] = []

    def start(replies: list[dict[str, Any]]) -> ScriptedServer:
        server = ScriptedServer(Script.from_dict({"replies": replies})).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def write_config(
    home: Path, base_url: str, *, agent: dict[str, Any] | None = None, **provider: Any
) -> None:
    """config.yaml: provider `scripted` keyed from the environment, plus an inline-keyed one."""
    entry = {"kind": "openai", "base_url": base_url, "api_key_env": "MY_PROVIDER_KEY"}
    entry["api_keys_env"] = ["MY_SECOND_KEY"]
    entry.update(provider)
    data = {
        "model": "scripted:test-model",
        "providers": {
            "scripted": entry,
            "other": {"kind": "openai", "base_url": base_url, "api_key": INLINE_KEY},
        },
        "agent": {"retry_base_seconds": 0.01, "max_retries": 2, **(agent or {})},
    }
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(yaml.safe_dump(data))


def run_cli(home: Path, cwd: Path, *args: str, env: dict[str, str] | None = None, umask=-1):
    """`hermes-tui ARGS` in a subprocess with exactly the provider variables in `env`."""
    clean = {k: v for k, v in os.environ.items() if k not in STANDARD_KEY_ENV and k not in KEY_ENV}
    clean.update({"HERMES_TUI_HOME": str(home), "NO_PROXY": "*", **(env or {})})
    return subprocess.run(
        [sys.executable, "-m", "hermes_tui", *args],
        capture_output=True,
        text=True,
        env=clean,
        cwd=cwd,
        timeout=60,
        umask=umask,
    )


def json_events(proc) -> list[dict[str, Any]]:
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


def tool_outputs(proc) -> list[str]:
    return [e["output"] for e in json_events(proc) if e["type"] == "ToolFinished"]


def assert_one_sentence(proc, *needles: str) -> str:
    """Exit 1, no traceback, exactly one `hermes-tui:` line holding every needle."""
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("hermes-tui:")]
    assert len(lines) == 1, proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def shell_call(command: str, call_id: str = "sh1") -> dict[str, Any]:
    return {"id": call_id, "name": "run_shell", "arguments": {"command": command}}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


# -- run_shell children do not get the keys -------------------------------------------------------


ENV_PROBE = "env; echo LENGTH=${#ANTHROPIC_API_KEY}"


def test_run_shell_env_holds_no_key_variable(hermes_home, serve, ws):
    server = serve([{"tool_calls": [shell_call(ENV_PROBE)]}, {"text": "done"}])
    write_config(hermes_home, server.openai_base_url)
    proc = run_cli(hermes_home, ws, "run", "--json", "--yes", "show env", env=KEY_ENV)
    assert proc.returncode == 0, proc.stderr
    (output,) = tool_outputs(proc)
    assert "HARMLESS_VAR=visible-to-tools" in output  # the rest of the environment is there
    for name in ("MY_PROVIDER_KEY", "MY_SECOND_KEY", "ANTHROPIC_API_KEY", "ALIAS_OF_THE_KEY"):
        assert f"{name}=" not in output, name
    assert "LENGTH=0" in output
    assert not any(key in proc.stdout for key in ALL_KEYS)


def test_run_shell_env_gets_a_key_the_user_passes_through_by_name(hermes_home, serve, ws):
    server = serve([{"tool_calls": [shell_call(ENV_PROBE)]}, {"text": "done"}])
    write_config(
        hermes_home, server.openai_base_url, agent={"shell_env_passthrough": ["ANTHROPIC_API_KEY"]}
    )
    proc = run_cli(hermes_home, ws, "run", "--json", "--yes", "show env", env=KEY_ENV)
    assert proc.returncode == 0, proc.stderr
    (output,) = tool_outputs(proc)
    assert f"LENGTH={len(ANTHROPIC_KEY)}" in output  # the child really has it
    # ... and what the child prints of it is still redacted like any tool output.
    assert "ANTHROPIC_API_KEY=[redacted]" in output and ANTHROPIC_KEY not in output
    assert "MY_PROVIDER_KEY=" not in output  # only the named variable passes


# -- tool output is redacted before it is stored, shown or sent ------------------------------------


def test_tool_output_with_keys_is_redacted_in_the_db_the_events_and_the_next_request(
    hermes_home, serve, ws
):
    (ws / ".env").write_text(
        f"MY_PROVIDER_KEY={PROVIDER_KEY}\nPOOL={POOL_KEY}\nOTHER={INLINE_KEY}\n"
        f"ANTHROPIC={ANTHROPIC_KEY}\nPLAIN=hello\n"
    )
    calls = [
        shell_call("cat .env"),
        {"id": "rf1", "name": "read_file", "arguments": {"path": ".env"}},
    ]
    server = serve([{"tool_calls": calls}, {"text": "I saw nothing."}])
    write_config(hermes_home, server.openai_base_url)
    proc = run_cli(hermes_home, ws, "run", "--json", "--yes", "read .env", env=KEY_ENV)
    assert proc.returncode == 0, proc.stderr
    outputs = tool_outputs(proc)
    assert len(outputs) == 2
    for output in outputs:
        assert "PLAIN=hello" in output and output.count("[redacted]") >= 4, output
    everything = proc.stdout + proc.stderr
    assert not any(key in everything for key in ALL_KEYS)
    # The database rows...
    conn = sqlite3.connect(hermes_home / "state.db")
    try:
        rows = [r[0] for r in conn.execute("SELECT content FROM messages WHERE role = 'tool'")]
    finally:
        conn.close()
    assert len(rows) == 2 and all("[redacted]" in row for row in rows)
    stored = b"".join(p.read_bytes() for p in hermes_home.glob("state.db*"))
    assert not any(key.encode() in stored for key in ALL_KEYS)
    # ... and the request that carried the results back to the model.
    follow_up = server.requests_for()[1].raw
    assert b"[redacted]" in follow_up and b"PLAIN=hello" in follow_up
    assert not any(key.encode() in follow_up for key in ALL_KEYS)


# -- base_url credentials never reach the database or error text ---------------------------------

URL_PASSWORD = "hunter2-url-password"
URL_TOKEN = "tok-in-the-query-0123"


def test_base_url_credentials_never_land_in_state_db(hermes_home, serve, ws):
    server = serve([{"text": "hi", "usage": {"input_tokens": 10, "output_tokens": 2}}])
    url = server.openai_base_url.replace("http://", f"http://alice:{URL_PASSWORD}@")
    write_config(hermes_home, url)
    proc = run_cli(hermes_home, ws, "run", "hello", env=KEY_ENV)
    assert proc.returncode == 0, proc.stderr
    conn = sqlite3.connect(hermes_home / "state.db")
    try:
        routes = [r[0] for r in conn.execute("SELECT route FROM session_model_usage")]
    finally:
        conn.close()
    assert routes == [server.openai_base_url]  # stored, without the userinfo
    stored = b"".join(p.read_bytes() for p in hermes_home.glob("state.db*"))
    assert URL_PASSWORD.encode() not in stored and b"alice" not in stored
    assert URL_PASSWORD not in proc.stdout + proc.stderr


def test_base_url_credentials_never_reach_the_error_sentence(hermes_home, ws):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there: every attempt is a connection error naming the URL
    url = f"http://alice:{URL_PASSWORD}@127.0.0.1:{port}/v1?api_key={URL_TOKEN}&v=2"
    write_config(hermes_home, url)
    proc = run_cli(hermes_home, ws, "run", "hello", env=KEY_ENV)
    line = assert_one_sentence(proc, "Cannot reach scripted", f"127.0.0.1:{port}/v1")
    assert "api_key=[redacted]" in line and "v=2" in line
    for secret in (URL_PASSWORD, URL_TOKEN, "alice"):
        assert secret not in proc.stderr + proc.stdout, secret
    stored = b"".join(p.read_bytes() for p in hermes_home.glob("state.db*"))
    assert URL_PASSWORD.encode() not in stored and URL_TOKEN.encode() not in stored


# -- a key that cannot go into an HTTP header -----------------------------------------------------


@pytest.mark.parametrize(
    ("where", "value", "needles"),
    [
        ("inline", "sk-abc\ndef-0123456789", ("`providers.scripted.api_key`", "line break")),
        ("env", "sk-café-0123456789", ("MY_PROVIDER_KEY", "non-ASCII")),
        ("pool", "sk-bell\x07-0123456789", ("MY_SECOND_KEY", "control character")),
    ],
)
def test_a_key_that_cannot_be_a_header_is_one_sentence_naming_its_source(
    hermes_home, serve, ws, where, value, needles
):
    server = serve([{"text": "never"}])
    env = dict(KEY_ENV)
    if where == "inline":
        write_config(hermes_home, server.openai_base_url, api_key=value)
    else:
        write_config(hermes_home, server.openai_base_url)
        env["MY_PROVIDER_KEY" if where == "env" else "MY_SECOND_KEY"] = value
    proc = run_cli(hermes_home, ws, "run", "hello", env=env)
    line = assert_one_sentence(proc, *needles)
    assert value not in line and "HTTP header" in line
    assert server.requests_for() == []  # checked before any request
    assert not (hermes_home / "state.db").exists()  # ... and before anything is stored


def test_a_bad_key_of_a_provider_chosen_later_is_a_sentence_too(hermes_home, serve, ws):
    server = serve([{"text": "never"}])
    write_config(hermes_home, server.openai_base_url)
    data = yaml.safe_load((hermes_home / "config.yaml").read_text())
    data["providers"]["spare"] = {
        "kind": "openai",
        "base_url": server.openai_base_url,
        "api_key_env": "SPARE_KEY",
    }
    (hermes_home / "config.yaml").write_text(yaml.safe_dump(data))
    env = {**KEY_ENV, "SPARE_KEY": "spare\r\nX-Injected: 1"}
    proc = run_cli(hermes_home, ws, "run", "--model", "spare:m", "hello", env=env)
    assert_one_sentence(proc, "SPARE_KEY", "line break")
    assert server.requests_for() == []


# -- files under HERMES_TUI_HOME are private ------------------------------------------------------


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_fresh_home_is_0700_and_state_db_0600_whatever_the_umask(tmp_path, ws):
    home = tmp_path / "new-parent" / "hermes-home"
    proc = run_cli(home, ws, "run", "--demo", "hello", umask=0)
    assert proc.returncode == 0, proc.stderr
    assert mode(home) == 0o700 and mode(home.parent) == 0o700
    assert mode(home / "state.db") == 0o600
    leftovers = [p for p in home.glob("state.db*") if mode(p) != 0o600]
    assert leftovers == []
