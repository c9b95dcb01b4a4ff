"""Headless runs against local servers (issue 16 item 7): what the user reads, what is kept."""

from __future__ import annotations

import json
import sqlite3

import pytest
import yaml
from test_headless_errors import assert_one_clear_error, run_cli, run_cli_process

from agent.scripted import Script, ScriptedServer


@pytest.fixture
def server():
    scripted = ScriptedServer(Script.from_dict({"replies": [{"text": "ok"}], "loop": True}))
    scripted.start()
    yield scripted
    scripted.stop()


def configure(home, server, *, window=None, model="scripted:a"):
    provider = {"kind": "openai", "base_url": server.openai_base_url, "api_key": "k"}
    if window:
        provider["context_window"] = window
    config = {
        "model": model,
        "providers": {"scripted": provider},
        "agent": {"retry_base_seconds": 0.01},
    }
    (home / "config.yaml").write_text(yaml.safe_dump(config))


def session_id(proc) -> str:
    line = next(line for line in proc.stderr.splitlines() if line.startswith("[session "))
    return line.removeprefix("[session ").rstrip("]")


def rows(home, sid) -> list[tuple]:
    conn = sqlite3.connect(home / "state.db")
    try:
        return conn.execute(
            "SELECT role, display_kind, display_metadata FROM messages WHERE session_id = ?"
            " ORDER BY seq",
            (sid,),
        ).fetchall()
    finally:
        conn.close()


def session_metadata(home, sid) -> dict:
    conn = sqlite3.connect(home / "state.db")
    try:
        (raw,) = conn.execute("SELECT metadata FROM sessions WHERE id = ?", (sid,)).fetchone()
    finally:
        conn.close()
    return json.loads(raw) if raw else {}


def test_a_model_without_a_provider_says_the_shape_it_needs(hermes_home, server):
    configure(hermes_home, server)
    proc = run_cli(hermes_home, "run", "--model", "badformat", "hello")
    assert_one_clear_error(proc, "must look like provider:model")
    assert "Unknown provider" not in proc.stderr


def test_log_records_go_to_the_log_file_never_to_stderr(hermes_home, server):
    # A window so small that automatic compaction runs and has nothing to summarise.
    configure(hermes_home, server, window=60)
    # A process of its own: in the test process pytest's log capture would hide a record
    # that reached the terminal without the app's log setup.
    proc = run_cli_process(hermes_home, "run", "hello " * 40)
    assert proc.returncode == 0, proc.stderr
    assert "compaction failed" not in proc.stderr
    assert "WARNING" not in proc.stderr and "hermes_tui." not in proc.stderr
    log = (hermes_home / "logs" / "hermes-tui.log").read_text()
    assert "compaction failed (nothing to summarise)" in log


def test_the_compaction_cooldown_survives_into_the_next_run_of_the_session(hermes_home, server):
    """C3: the one cooldown ladder holds across processes; C4: blocked, it warns once."""
    configure(hermes_home, server, window=60)
    first = run_cli(hermes_home, "run", "hello " * 40)
    sid = session_id(first)
    stored = session_metadata(hermes_home, sid)["compaction_cooldown"]
    assert stored["failures"] == 1
    # The second run is a process of its own: only the stored cooldown can reach it.
    second = run_cli_process(hermes_home, "run", "--resume", sid, "again " * 40)
    assert second.returncode == 0, second.stderr
    # The second run honours the first run's cooldown: it warns once and does not try again.
    assert "cooling down after a failure" in second.stderr
    log = (hermes_home / "logs" / "hermes-tui.log").read_text()
    assert log.count("compaction failed") == 1


def test_resume_with_another_model_records_the_switch(hermes_home, server):
    """D1: a `model_switch` row, as /model records it."""
    configure(hermes_home, server, model="scripted:a")
    first = run_cli(hermes_home, "run", "hello")
    sid = session_id(first)
    second = run_cli(hermes_home, "run", "--resume", sid, "--model", "scripted:b", "go on")
    assert second.returncode == 0, second.stderr
    switches = [json.loads(meta) for _role, kind, meta in rows(hermes_home, sid) if kind]
    assert switches == [{"from": "scripted:a", "to": "scripted:b"}]
    assert server.requests[-1].body["model"] == "b"
