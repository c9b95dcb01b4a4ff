"""Private files and redacted tool blocks in the TUI (SPEC H5): pilot runs on the real app.

`/theme` rewrites a 0600 config.yaml atomically and keeps it 0600; the database with its -wal
and -shm, and the theme cache, are 0600 in 0700 folders whatever the umask; a tool block
never shows a configured key that a hostile command printed.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
import yaml
from helpers import write_config
from ui.tui_helpers import quick_probes

from agent.config import load_config
from agent.scripted import Script, ScriptedServer
from hermes_tui.app import HermesApp
from hermes_tui.theming import load_themes, theme_cache_path
from hermes_tui.widgets.tool_block import ToolBlock
from storage.db import SessionDB

KEY = "sk-test-key-123456"  # the key tests/helpers.write_config puts in the config


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def umask_zero():
    """The most permissive umask: modes must come from the code, not from the umask."""
    previous = os.umask(0)
    yield
    os.umask(previous)


@pytest.fixture
def server():
    script = {
        "replies": [
            {
                "tool_calls": [
                    {"id": "c1", "name": "run_shell", "arguments": {"command": "cat .env"}}
                ]
            },
            {"text": "done"},
        ]
    }
    running = ScriptedServer(Script.from_dict(script)).start()
    yield running
    running.stop()


async def test_theme_keeps_a_0600_config_0600_and_rewrites_it_atomically(
    hermes_home: Path, server, tmp_path: Path
):
    write_config(hermes_home, server)
    config = hermes_home / "config.yaml"
    config.write_text("# keep this comment\n" + config.read_text())
    config.chmod(0o600)
    before = config.stat().st_ino
    app = HermesApp(
        load_config(),
        workspace=tmp_path,
        probes=quick_probes(),
    )
    async with app.run_test(size=(120, 36)) as pilot:
        await app.submit("/theme hermes-light")
        await pilot.pause()
        assert app.theme == "hermes-light"
    assert mode(config) == 0o600
    text = config.read_text()
    assert text.startswith("# keep this comment\n") and KEY in text
    assert yaml.safe_load(text)["ui"] == {"theme": "hermes-light"}
    # A new file renamed into place (not rewritten in place), and no temporary left behind.
    assert config.stat().st_ino != before
    assert sorted(p.name for p in hermes_home.iterdir() if "config" in p.name) == ["config.yaml"]


@pytest.mark.usefixtures("umask_zero")
async def test_state_db_wal_and_shm_are_0600_in_a_0700_home(tmp_path: Path):
    home = tmp_path / "fresh-home"
    db = await SessionDB.open(home / "state.db")
    try:
        await db.create_session(model="m", provider="p", workspace="w", title="t")
        files = {name: home / name for name in ("state.db", "state.db-wal", "state.db-shm")}
        assert all(path.exists() for path in files.values())
        assert {name: mode(path) for name, path in files.items()} == dict.fromkeys(files, 0o600)
        assert mode(home) == 0o700
    finally:
        await db.close()


async def test_an_old_world_readable_state_db_is_tightened(tmp_path: Path):
    home = tmp_path / "home"
    db = await SessionDB.open(home / "state.db")
    await db.close()
    (home / "state.db").chmod(0o644)
    db = await SessionDB.open(home / "state.db")
    try:
        await db.create_session(model="m", provider="p", workspace="w", title="t")
        assert mode(home / "state.db") == 0o600 and mode(home / "state.db-wal") == 0o600
    finally:
        await db.close()


@pytest.mark.usefixtures("umask_zero")
def test_the_theme_cache_is_0600_in_a_0700_folder(tmp_path: Path):
    home = tmp_path / "home"
    home.mkdir()
    load_themes(home)
    cache = theme_cache_path(home)
    assert mode(cache) == 0o600 and mode(cache.parent) == 0o700


async def test_a_tool_block_never_shows_a_configured_key(hermes_home: Path, server, tmp_path):
    write_config(hermes_home, server)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / ".env").write_text(f"OPENAI_API_KEY={KEY}\nDEBUG=1\n")
    app = HermesApp(
        load_config(),
        workspace=workspace,
        probes=quick_probes(),
    )
    async with app.run_test(size=(120, 36)) as pilot:
        await app.submit("read it")
        await app.wait_for_turn(20)
        await pilot.pause()
        block = app.transcript.query_one(ToolBlock)
        assert block.state == "ok"
        assert "OPENAI_API_KEY=[redacted]" in block.output and "DEBUG=1" in block.output
        assert KEY not in block.output
