"""The first frame imports only what it draws (SPEC Z2; `bench startup`): the store, the agent,
the command table and the completion load after it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from hermes_tui.app import BENCH_FIRST_FRAME_ENV

AFTER_FIRST_FRAME = (
    "storage.db",
    "aiosqlite",
    "sqlite3",
    "agent.loop",
    "openai",
    "anthropic",
    "httpx",
    "yaml",
    "markdown_it",
    "hermes_tui.commands",
    "hermes_tui.completion.controller",
    "rapidfuzz",
    "hermes_tui.changes",
    "hermes_tui.screens.rewind",
    # The widgets of stored rows and of a turn's tools (and what they import).
    "hermes_tui.widgets.tool_block",
    "hermes_tui.widgets.diff_view",
    "hermes_tui.widgets.markers",
    "hermes_tui.widgets.notes",
    "hermes_tui.widgets.subagent_line",
    # The welcome is mounted by the start after the first frame; hashlib keys a config file's
    # cache, and this start has none.
    "hermes_tui.widgets.welcome",
    "hashlib",
)
"""Modules an empty session's first frame does not need (each costs start-up time)."""

# The CLI's own path to the TUI, up to the first frame: the app exits right after painting it
# (before the runtime starts), and the modules loaded by then are printed.
FIRST_FRAME = f"""
import json, sys
import hermes_tui.cli
from hermes_tui.runtime import load_config_for
from hermes_tui.app import HermesApp

HermesApp(load_config_for(demo=True, model=None)).run(headless=True)
print(json.dumps([name for name in {AFTER_FIRST_FRAME!r} if name in sys.modules]))
"""


def test_the_first_frame_imports_neither_the_store_nor_the_agent_nor_the_commands(tmp_path):
    """Z2: start-up costs what the first screen costs; the rest loads after it is painted."""
    env = {**os.environ, BENCH_FIRST_FRAME_ENV: "1"}
    # The first start parses the theme files (PyYAML) and caches them; a start after it, as
    # every start on a user's machine but the first, reads the cache.
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", FIRST_FRAME],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


# Up to the agent's start, then the preload thread's end (bounded); no turn is sent.
FIRST_TURN = """
import asyncio, json, sys
from hermes_tui.runtime import load_config_for
from hermes_tui.app import HermesApp

async def main():
    app = HermesApp(load_config_for(demo=True, model=None))
    async with app.run_test(headless=True):
        await app.ready()
        app.preloading.join(timeout=30)
        alive = app.preloading.is_alive()
    names = ("openai", "agent.providers.openai_chat", "hermes_tui.widgets.answer",
             "hermes_tui.widgets.live_answer", "markdown_it", "pygments.lexers.python")
    missing = [name for name in names if name not in sys.modules]
    if "pygments.lexers.python" not in missing:
        # Its rules are compiled on a lexer's first use: the first code block's cost.
        if "_tokens" not in vars(sys.modules["pygments.lexers.python"].PythonLexer):
            missing.append("the Python lexer's compiled rules")
    print(json.dumps([alive, missing]))

asyncio.run(main())
"""


def test_what_the_first_turn_imports_is_loaded_before_it_is_sent(tmp_path):
    """Z2: the SDK, the answer's widgets and the code highlighter load on a thread once the
    app is up, not on the first Enter (where they cost about a second of a 20,000-chunk
    turn; bench tmux_stream) or the first resume of a session with code in it."""
    done = subprocess.run(
        [sys.executable, "-c", FIRST_TURN],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [False, []]
